"""utils.eval.metrics: unbiased pass@k, evaluate() on the shipped model."""
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from tolerance import ULPS, assert_near

from utils.eval.metrics import evaluate, pass_at_k
from utils.models.policy import masked_mean
from utils.tasks.arithmetic import load_split
from utils.verifiers.arithmetic import strict_match


def enumerate_pass_at_k(n, c, k):
    """pass@k by brute force: the share of k-subsets of n samples (c of them correct) that
    contain at least one correct sample."""
    samples = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_equals_enumeration(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(enumerate_pass_at_k(n, c, k), abs=1e-12), (n, c, k)


def test_pass_at_k_hand_values():
    # n=4, c=1, k=2: 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    # k=1 is the plain success rate c/n
    assert pass_at_k(8, 3, 1) == pytest.approx(3 / 8)
    assert pass_at_k(10, 0, 5) == 0.0


@pytest.mark.parametrize("n, c, k", [(4, 2, 3), (4, 4, 1), (8, 5, 4), (1, 1, 1), (1024, 1000, 25)])
def test_pass_at_k_exactly_one_when_every_subset_has_a_correct(n, c, k):
    assert n - c < k
    assert pass_at_k(n, c, k) == 1.0


@pytest.mark.parametrize("c, k", [(0, 1), (1, 1), (1, 512), (3, 100), (10, 1000), (100, 1), (500, 10), (1023, 1),
                                  (1, 1024), (0, 1024)])
def test_pass_at_k_stable_for_large_n(c, k):
    n = 1024
    got = pass_at_k(n, c, k)
    assert not math.isnan(got) and 0.0 <= got <= 1.0
    # exact value with big integers and fractions
    want = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    assert got == pytest.approx(float(want), abs=1e-9)


def test_pass_at_k_large_n_hand_value():
    # n=1024, c=1, k=512: 1 - C(1023,512)/C(1024,512) = 1 - (1024-512)/1024 = 0.5
    assert pass_at_k(1024, 1, 512) == pytest.approx(0.5, abs=1e-12)


def test_pass_at_k_monotone_in_k():
    vals = [pass_at_k(64, 3, k) for k in range(1, 65)]
    assert all(b >= a - 1e-12 for a, b in zip(vals, vals[1:]))


@pytest.mark.parametrize("n, c, k", [
    (4, 1, 5),     # k > n
    (4, 1, 0),     # k < 1
    (4, 1, -1),
    (-4, 1, 1),    # negative counts
    (4, -1, 1),
    (4, 5, 2),     # c > n
    (4, 1.5, 1),   # not an integer
    (0, 0, 1),
])
def test_pass_at_k_invalid(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_masked_mean_hand():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    # (1 + 2 + 4) / 3 = 7/3
    assert masked_mean(x, mask).item() == pytest.approx(7 / 3)
    assert masked_mean(x, torch.ones_like(mask)).item() == pytest.approx(3.5)
    assert masked_mean(x, torch.zeros_like(mask)).item() == 0.0  # empty mask -> 0, not nan
    assert masked_mean(x, mask.bool()).item() == pytest.approx(7 / 3)


@pytest.fixture(scope="module")
def problems():
    ds = load_split("test", n=40)
    return list(ds["prompt"]), list(ds["answer"])


def test_evaluate_deterministic_given_seed(shipped, problems):
    model, tok = shipped
    p, a = problems
    e1 = evaluate(model, tok, p, a, k=4, seed=3)
    e2 = evaluate(model, tok, p, a, k=4, seed=3)
    assert e1["texts"] == e2["texts"]
    assert np.array_equal(e1["correct"], e2["correct"])
    assert e1["pass@1"] == e2["pass@1"] and e1["pass@4"] == e2["pass@4"]
    e3 = evaluate(model, tok, p, a, k=4, seed=4)
    assert e3["texts"] != e1["texts"]  # 160 samples at temperature 1: another seed differs


def test_evaluate_bookkeeping(shipped, problems):
    model, tok = shipped
    p, a = problems
    k = 4
    ev = evaluate(model, tok, p, a, k=k, seed=0, batch_size=32)  # several batches of 8 prompts
    assert len(ev["texts"]) == k * len(p) and ev["correct"].shape == (len(p),)
    # texts are grouped by prompt: texts[i*k:(i+1)*k] are prompt i's samples
    want = [sum(strict_match(t, a[i]) for t in ev["texts"][i * k:(i + 1) * k]) for i in range(len(p))]
    assert ev["correct"].tolist() == want
    assert ev["pass@1"] == pytest.approx(sum(want) / (k * len(p)))
    # with n = k samples, pass@k is the share of prompts with at least one correct sample
    assert ev["pass@4"] == pytest.approx(np.mean([c > 0 for c in want]))
    assert ev["pass@4"] >= ev["pass@1"]
    assert "pass@1" in evaluate(model, tok, p[:3], a[:3], k=1)
    assert "pass@2" not in evaluate(model, tok, p[:3], a[:3], k=1)


def test_evaluate_batching_does_not_change_results(shipped, problems):
    model, tok = shipped
    p, a = problems
    e1 = evaluate(model, tok, p, a, k=1, temperature=0)
    e2 = evaluate(model, tok, p, a, k=1, temperature=0, batch_size=7)
    assert e1["texts"] == e2["texts"]


def test_evaluate_greedy_is_repeatable(shipped, problems):
    model, tok = shipped
    p, a = problems
    g1 = evaluate(model, tok, p, a, k=1, temperature=0, seed=0)
    g2 = evaluate(model, tok, p, a, k=1, temperature=0, seed=99)  # the seed does not matter when greedy
    assert g1["texts"] == g2["texts"]
    assert g1["pass@1"] == g2["pass@1"]
    # greedy with k=2 gives the same answer twice per prompt
    g3 = evaluate(model, tok, p, a, k=2, temperature=0)
    assert g3["texts"][0::2] == g3["texts"][1::2] == g1["texts"]


def test_evaluate_custom_reward_fn(shipped, problems):
    model, tok = shipped
    p, a = problems
    ev = evaluate(model, tok, p, a, k=2, reward_fn=lambda comps, answer, **kw: [1.0] * len(comps))
    assert ev["pass@1"] == 1.0 and ev["correct"].tolist() == [2.0] * len(p)


def test_policy_report_keys_and_relations(shipped, problems):
    """greedy is evaluate() at temperature 0; pass@1 and pass@8 are evaluate()'s at the same seed;
    entropy is positive and finite; pass@8 >= pass@1; a repeat gives the same numbers."""
    from utils.eval.metrics import policy_report

    model, tok = shipped
    p, a = problems
    rep = policy_report(model, tok, p, a, k=8, seed=3)
    assert set(rep) == {"greedy", "pass@1", "pass@8", "entropy"}
    assert rep["greedy"] == evaluate(model, tok, p, a, k=1, temperature=0)["pass@1"]
    ev = evaluate(model, tok, p, a, k=8, seed=3)
    assert rep["pass@1"] == ev["pass@1"] and rep["pass@8"] == ev["pass@8"]
    assert rep["pass@8"] >= rep["pass@1"] and 0 < rep["entropy"] < math.log(len(tok))
    assert policy_report(model, tok, p, a, k=8, seed=3) == rep
    # greedy decoding has entropy too (of the distribution), but a peaked temperature lowers it
    assert policy_report(model, tok, p, a, k=8, seed=3, temperature=0.5)["entropy"] < rep["entropy"]


# ------------------------------------------------------------------------------ Lab 05 helpers
from utils.eval.metrics import bootstrap_pass_at_k, compression_ratio, pass_at_k_table, read_pass_at_k  # noqa: E402


def test_pass_at_k_table_by_hand():
    # n = 4: c = 0 -> 0; c = 2 -> pass@1 = 1/2, pass@2 = 1 - C(2,2)/C(4,2) = 5/6; c = 4 -> 1
    table = pass_at_k_table(4, [1, 2])
    assert table.shape == (5, 2) and table[2] == pytest.approx([0.5, 5 / 6])
    assert table[0] == pytest.approx([0, 0]) and table[4] == pytest.approx([1, 1])
    curve = table[np.array([0, 2, 4])].mean(0)          # the curve over three problems is a lookup
    assert curve == pytest.approx([(0 + 0.5 + 1) / 3, (0 + 5 / 6 + 1) / 3])


def test_bootstrap_band_contains_curve_and_shrinks_to_point():
    counts = np.array([0, 1, 3, 8, 8, 2, 0, 5])
    ks = [1, 2, 4, 8]
    lo, hi = bootstrap_pass_at_k(counts, 8, ks, n_boot=500, seed=1)
    mid = pass_at_k_table(8, ks)[counts].mean(0)
    assert (lo <= mid + 1e-12).all() and (mid <= hi + 1e-12).all() and (lo < hi).all()
    lo2, hi2 = bootstrap_pass_at_k(np.full(10, 3), 8, ks, n_boot=200)   # identical problems: no spread
    assert lo2 == pytest.approx(hi2)
    again = bootstrap_pass_at_k(counts, 8, ks, n_boot=500, seed=1)
    assert (again[0] == lo).all() and (again[1] == hi).all()


def test_compression_ratio_worked_example():
    # the worked example in the docstring: 40% / 75% before, 65% after -> 25 / 35 = 0.714
    assert compression_ratio(0.40, 0.75, 0.65) == pytest.approx(25 / 35)
    assert compression_ratio(0.40, 0.75, 0.40) == 0.0
    assert compression_ratio(0.40, 0.75, 0.30) == pytest.approx(-10 / 35)
    assert math.isnan(compression_ratio(0.5, 0.5, 0.6))


@pytest.mark.parametrize("d1, dk, want", [
    (0.25, 0.02, "compression (sharpening or re-ranking"), (0.25, 0.10, "more reached at this k"),
    (-0.2, -0.3, "mode collapse"), (0.25, -0.10, "cost of coverage"), (0.0, 0.0, "no clear change"),
    (0.01, -0.30, "coverage lost"), (-0.10, 0.0, "pass@1 down"), (0.0, 0.05, "wider coverage")])
def test_read_pass_at_k(d1, dk, want):
    assert want in read_pass_at_k(d1, dk)


# ---- Lab 04: answer distributions and right-answer log-likelihood

def test_answer_distribution_counts_k_answers_per_prompt(shipped):
    from utils.eval.metrics import answer_distribution
    model, tok = shipped
    dist = answer_distribution(model, tok, ["37+29=", "5+5="], k=16, seed=0)
    assert len(dist) == 2 and all(sum(c.values()) == 16 for c in dist)
    assert dist == answer_distribution(model, tok, ["37+29=", "5+5="], k=16, seed=0)   # seeded
    from collections import Counter

    from utils.eval.metrics import evaluate
    texts = evaluate(model, tok, ["37+29=", "5+5="], ["66", "10"], k=16, seed=0)["texts"]
    assert dist == [Counter(t.strip() for t in texts[:16]), Counter(t.strip() for t in texts[16:])]  # same stream
    greedy = answer_distribution(model, tok, ["5+5="], k=4, temperature=0)
    assert len(greedy[0]) == 1                                   # greedy: one answer, four times


def test_answer_logprob_matches_the_sampler_and_sums_tokens(shipped):
    """The greedy answer's log-likelihood equals the sum of the sampler's own token log-probs for it;
    a four-digit answer to a two-digit sum is far less likely; all values are <= 0."""
    from utils.eval.metrics import answer_logprob
    from utils.models.policy import sample
    model, tok = shipped
    r = sample(model, tok, ["37+29="], k=1, temperature=0)
    greedy = r.texts[0]
    lp = answer_logprob(model, tok, ["37+29=", "37+29=", "37+29="], [greedy, "66", "9999"])
    assert lp.shape == (3,) and (lp <= 0).all()
    # the same number the sampler saw, to rounding: a forward pass against the sampler's own log-probs, and a sum of
    # n of them rounds n times as much as one
    n = int(r.completion_mask.sum())
    assert_near(lp[0], r.logprobs.sum(), "the answer's log-likelihood against the sampler's", ulps=n * ULPS)
    assert lp[0] > lp[2] + 5
    n = len(tok.encode("66", add_special_tokens=False)) + 1                     # its tokens and EOS
    assert_near(lp[1], answer_logprob(model, tok, ["37+29="], [66])[0], "'66' in a batch and an int alone",
                ulps=n * ULPS)                                                 # int answers ok; another batch shape
    with pytest.raises(ValueError, match="differ in length"):
        answer_logprob(model, tok, ["1+1="], [])


# ---------------------------------------------------------------- the one sampling path, the held-out evaluator
def test_sample_in_batches_is_one_stream_cut_into_chunks(shipped, problems):
    """The same seed gives the same samples however the prompts are batched: one seeded generator
    carried across chunks; each chunk says which prompts it holds."""
    from utils.eval.metrics import sample_in_batches
    from utils.models.policy import sample
    model, tok = shipped
    prompts = problems[0][:10]
    chunks = list(sample_in_batches(model, tok, prompts, k=4, seed=3, batch_size=16))   # 16 // 4 = 4 prompts each
    assert [start for start, _ in chunks] == [0, 4, 8]
    assert [len(r.texts) for _, r in chunks] == [16, 16, 8]
    whole = sample(model, tok, prompts[:4], k=4, generator=torch.Generator().manual_seed(3))
    assert chunks[0][1].texts == whole.texts                       # the first chunk: one sample() call
    again = [t for _, r in sample_in_batches(model, tok, prompts, k=4, seed=3, batch_size=16) for t in r.texts]
    assert again == [t for _, r in chunks for t in r.texts]


def test_evaluate_entropy_is_on_the_same_samples(shipped, problems):
    """entropy=True adds the mean token entropy and changes no other number (same samples)."""
    model, tok = shipped
    a = evaluate(model, tok, *problems, k=4, seed=2)
    b = evaluate(model, tok, *problems, k=4, seed=2, entropy=True)
    assert a["texts"] == b["texts"] and a["pass@4"] == b["pass@4"] and "entropy" not in a
    assert 0 < b["entropy"] < math.log(len(tok))


def test_eval_sets_of_and_heldout_keys_by_hand():
    from utils.eval.metrics import eval_sets_of, heldout_keys
    sets = eval_sets_of(["1+1="], ["2"], {"ood": (["100+1="], ["101"])})
    assert list(sets) == ["heldout", "ood"]                       # the held-out set first
    assert eval_sets_of() == {}
    assert heldout_keys(sets, {"proxy": None}) == {"heldout_pass@1": None, "heldout_proxy": None, "ood_pass@1": None}
    assert heldout_keys({}) == {"heldout_pass@1": None}
    for bad in ({"heldout": (["a"], ["b"])}, {"ood": (["a"], [])}, {"ood": "not a pair"}):
        with pytest.raises(ValueError, match="eval_sets"):
            eval_sets_of(eval_sets=bad)
    with pytest.raises(ValueError, match="together"):
        eval_sets_of(["1+1="], None)


def test_heldout_metrics_scores_the_first_n_with_every_reward(shipped, problems):
    from utils.eval.metrics import HELDOUT_SEED, heldout_metrics
    from utils.verifiers.arithmetic import any_number_reward
    model, tok = shipped
    ps, ys = problems
    out = heldout_metrics(model, tok, {"heldout": (ps, ys), "again": (ps, ys)}, {"format": any_number_reward}, n=8)
    ev = evaluate(model, tok, ps[:8], ys[:8], k=1, seed=HELDOUT_SEED)
    assert out["heldout_pass@1"] == out["again_pass@1"] == ev["pass@1"]
    assert out["heldout_format"] == float(np.mean(any_number_reward(ev["texts"], ys[:8])))
    assert set(out) == {"heldout_pass@1", "again_pass@1", "heldout_format"}
    # correct_fn judges pass@1 instead of the strict verifier: the same samples, scored by any_number_reward
    judged = heldout_metrics(model, tok, {"heldout": (ps, ys)}, n=8, correct_fn=any_number_reward)
    assert judged["heldout_pass@1"] == out["heldout_format"] and judged["heldout_pass@1"] != ev["pass@1"]


from utils.eval.metrics import guess_pass_at_k, guess_rate, largest_k_under  # noqa: E402


def test_guess_rate_by_hand():
    assert guess_rate("7") == 1 / 10 and guess_rate("0") == 1 / 10 and guess_rate("-7") == 1 / 9
    assert guess_rate("66") == 1 / 90 and guess_rate("-12") == 1 / 90 and guess_rate(" 100 ") == 1 / 900
    assert guess_rate("-1234") == 1 / 9000
    for bad in ("", "1.5", "x", None):
        with pytest.raises(ValueError, match="integer answer"):
            guess_rate(bad)


def test_guess_pass_at_k_by_hand():
    got = guess_pass_at_k(["66", "7"], [1, 2, 10])
    assert got.shape == (2, 3)
    assert got[0] == pytest.approx([1 / 90, 1 - (89 / 90) ** 2, 1 - (89 / 90) ** 10])
    assert got[1] == pytest.approx([0.1, 0.19, 1 - 0.9 ** 10])


def test_largest_k_under():
    assert largest_k_under([0.01, 0.04, 0.06, 0.2], [1, 2, 4, 8]) == 2
    assert largest_k_under([0.01, 0.04], [1, 2], level=0.05) == 2
    assert largest_k_under([0.1, 0.2], [1, 2]) is None


def test_seed_difference_by_hand():
    from utils.eval.metrics import seed_difference
    # differences 0.1, 0.3, 0.2: mean 0.2, sample std 0.1, half-width 4.303 * 0.1 / sqrt(3)
    mean, half = seed_difference([0.6, 0.8, 0.7], [0.5, 0.5, 0.5])
    assert abs(mean - 0.2) < 1e-12 and abs(half - 4.303 * 0.1 / 3 ** 0.5) < 1e-9
    assert seed_difference([1, 1], [0, 0]) == (1.0, 0.0)
    with pytest.raises(ValueError, match="need 2 to 11 paired seeds"):
        seed_difference([0.5], [0.4])

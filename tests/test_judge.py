"""utils.models.judge: the learned judge's input, pooling, training and accuracy, against values worked by hand."""
import math

import pytest
import torch
from tolerance import assert_near

from utils.models import judge as jm
from utils.models.policy import char_tokenizer

TOK = char_tokenizer("0123456789+=", max_length=32)
SMALL = jm.JudgeConfig(n_layer=1, n_embd=16, n_head=2, steps=150, batch_size=16, lr=3e-3, seed=0)


def test_pairs_are_right_padded_and_a_long_one_keeps_its_problem():
    """A pair longer than the judge's window keeps its problem whole and its completion's end (issue 60: cut from the
    left, a long completion pushed the problem out of view); one whose problem alone fills it cannot be read."""
    ids, mask, readable = jm._encode_pairs(TOK, ["1+2=", "12+34=", "12+34="], ["3", "4699", "46"], n_positions=8)
    enc = lambda s: TOK(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    assert ids[0].tolist() == enc("1+2=3") + [TOK.pad_token_id] * 3 and mask[0].tolist() == [1] * 5 + [0] * 3
    assert ids[1].tolist() == enc("12+34=99") and mask[1].tolist() == [1] * 8     # the problem, then "...99"
    assert ids[2].tolist() == enc("12+34=46") and readable.tolist() == [True, True, True]
    _, _, readable = jm._encode_pairs(TOK, ["12+34=", "1+2=", "1+2="], ["4", "\ud800", "3"], n_positions=6)
    assert readable.tolist() == [False, False, True]   # the problem fills all 6; a text the tokenizer refuses


def test_a_long_completion_does_not_hide_the_problem():
    """Two problems, one long completion: the judge sees each problem, so its two scores differ. Cut from the left,
    both windows were the completion's last 8 tokens and the scores were equal."""
    judge = jm.make_judge(TOK, jm.JudgeConfig(n_layer=1, n_embd=16, n_head=2, n_positions=8, seed=0)).eval()
    p = jm.judge_probs(judge, TOK, ["1+2=", "5+5="], ["0000003", "0000003"])
    assert abs(p[0] - p[1]) > 1e-4, p


def test_one_unreadable_completion_gets_its_own_error_not_its_neighbours():
    """A completion the tokenizer cannot encode (a lone surrogate, reachable through JudgeClient): judge_probs names
    it; judge_scorer gives it NaN alone, and JudgeClient gives that one its default while its neighbours keep the
    judge's scores. Five such calls in a row are no failure: the circuit stays closed (issue 60: the whole batch
    took the default, and two such calls opened the circuit for the next three)."""
    from utils.verifiers.api import JudgeClient
    judge = jm.make_judge(TOK, SMALL).eval()
    with pytest.raises(ValueError, match=r"problems\[1\] \+ completions\[1\] cannot be judged"):
        jm.judge_probs(judge, TOK, ["1+2=", "1+2="], ["3", "\ud800"])
    alone = jm.judge_probs(judge, TOK, ["1+2="], ["3"])[0]
    got = jm.judge_scorer(judge, TOK)(["1+2=", "1+2="], ["3", "\ud800"])
    assert_near(got[0], alone, "a readable pair's score beside an unreadable one") and math.isnan(got[1])
    client = JudgeClient(jm.judge_scorer(judge, TOK), default=-1.0, max_failures=2, cooldown=3, cache=False)
    for _ in range(5):
        out = client(["3", "\ud800"], problem=["1+2=", "1+2="])
        assert_near(out[0], alone, "the neighbour's score") and out[1] == -1.0
    s = client.stats()
    assert not client.circuit_open and (s["failures"], s["judged"], s["fallback_scores"]) == (0, 5, 5)


def test_the_score_is_read_at_the_last_real_token_whatever_the_padding():
    judge = jm.make_judge(TOK, SMALL).eval()
    alone = jm.judge_probs(judge, TOK, ["1+2="], ["3"])
    padded = jm.judge_probs(judge, TOK, ["1+2=", "12+34="], ["3", "4699"])   # the first row is padded by 4
    assert_near(alone[0], padded[0], "a row's score alone and padded")   # another batch shape: to rounding


def test_accuracy_and_error_rates_by_hand(monkeypatch):
    monkeypatch.setattr(jm, "judge_probs", lambda judge, tok, p, c: [0.9, 0.2, 0.6, 0.4])
    # says right, wrong, right, wrong; truth right, right, wrong, wrong
    r = jm.judge_accuracy(None, TOK, ["a"] * 4, ["b"] * 4, [1, 1, 0, 0])
    assert (r["accuracy"], r["false_pos_rate"], r["false_neg_rate"], r["n"]) == (0.5, 0.5, 0.5, 4)
    r = jm.judge_accuracy(None, TOK, ["a"] * 4, ["b"] * 4, [1, 1, 0, 0], threshold=0.1)   # passes everything
    assert (r["accuracy"], r["false_pos_rate"], r["false_neg_rate"]) == (0.5, 1.0, 0.0)


def _rule_data(n, seed):
    """Problems 'a+b=' with completions that are the right sum, or wrong: the sum with a 0 written after it (a
    rule a judge can see without doing the sum). Label 1 iff right."""
    g = torch.Generator().manual_seed(seed)
    a, b, off = (torch.randint(0, 10, (n,), generator=g) for _ in range(3))
    right = off < 5
    comps = [str(int(x + y)) + ("" if r else "0") for x, y, r in zip(a, b, right)]
    return [f"{x}+{y}=" for x, y in zip(a.tolist(), b.tolist())], comps, right.float().tolist()


def test_a_judge_learns_a_rule_it_can_see_and_the_same_seed_gives_the_same_judge():
    p, c, y = _rule_data(400, 0)
    judge, hist = jm.train_judge(TOK, p, c, y, SMALL, progress=False)
    assert len(hist) == SMALL.steps and hist[-1]["loss"] < hist[0]["loss"]
    hp, hc, hy = _rule_data(200, 1)
    assert jm.judge_accuracy(judge, TOK, hp, hc, hy)["accuracy"] > 0.9
    again, _ = jm.train_judge(TOK, p, c, y, SMALL, progress=False)
    assert all(torch.equal(u, v) for u, v in zip(judge.state_dict().values(), again.state_dict().values()))


def test_the_scorer_is_what_judge_client_asks_for():
    judge = jm.make_judge(TOK, SMALL)
    score = jm.judge_scorer(judge, TOK)
    assert score(["1+2=", "3+4="], ["3", ""]) == jm.judge_probs(judge, TOK, ["1+2=", "3+4="], ["3", ""])


@pytest.mark.parametrize("kw, match", [
    (dict(labels=[1, 2]), "labels must be 0 or 1"), (dict(labels=[1]), "as long as each other"),
    (dict(completions="3"), "completions"), (dict(problems=[]), "problems"),
    (dict(cfg=jm.JudgeConfig(n_embd=10, n_head=4)), "multiple of n_head"), (dict(cfg="big"), "cfg")])
def test_bad_training_input_is_refused_by_name(kw, match):
    args = dict(tokenizer=TOK, problems=["1+2=", "3+4="], completions=["3", "8"], labels=[1, 0], cfg=SMALL,
                progress=False)
    with pytest.raises(ValueError, match=match):
        jm.train_judge(**{**args, **kw})


def test_verdict_rates_by_hand():
    """P >= threshold passes; the false-positive rate is over the wrong ones only, the false-negative over the right
    ones; a threshold of exactly P passes; nan where a class is empty."""
    r = jm.verdict_rates([0.9, 0.5, 0.2, 0.6, 0.49], [1, 0, 0, 1, 1])
    # passes: 0.9 (right), 0.5 (wrong: at the threshold), 0.6 (right); fails 0.2 (wrong), 0.49 (right)
    assert (r["accuracy"], r["false_pos_rate"], r["false_neg_rate"], r["n"]) == (0.6, 0.5, 1 / 3, 5)
    # AUROC: right ones 0.9, 0.6, 0.49 against wrong ones 0.5, 0.2: 0.9 and 0.6 beat both, 0.49 beats 0.2 only
    assert r["auroc"] == pytest.approx(5 / 6) and r["base_rate"] == 0.6
    tie = jm.verdict_rates([0.5, 0.5, 0.3], [1, 0, 0])   # a tie counts half: (0.5 + 1) / 2
    assert tie["auroc"] == 0.75
    assert jm.verdict_rates([0.2, 0.8], [1, 0])["auroc"] == 0.0   # ranked backwards
    r = jm.verdict_rates([0.1, 0.7], [True, True])
    assert math.isnan(r["false_pos_rate"]) and r["false_neg_rate"] == 0.5 and math.isnan(r["auroc"])
    for bad, name in ((dict(probs=[0.5], right=[1, 0]), "as long"), (dict(probs=[0.5], right=[2]), "right"),
                      (dict(probs=[0.5], right=[1], threshold=2), "threshold"),
                      (dict(probs=[2.2, -0.4], right=[1, 0]), "probs must be probabilities.*logits")):
        with pytest.raises(ValueError, match=name):
            jm.verdict_rates(**bad)


def test_rubric_labels_flip_the_stated_share_and_judge_report_reads_both(monkeypatch):
    """rubric_labels: the truth is the rule's, about `flip` of the labels disagree with it, the same seed gives the
    same labels; judge_report: a judge that passes everything has false-positive rate 1 and false-negative 0."""
    from utils.eval import judging
    from utils.models.policy import load_policy
    from utils.tasks.arithmetic import load_split

    model, tok = load_policy()
    ds = load_split("train", 200)
    lab = judging.rubric_labels(model, tok, ds["prompt"], ds["answer"], k=4, flip=0.25, seed=3)
    assert len(lab["labels"]) == len(lab["truth"]) == len(lab["completions"]) == 800
    assert lab["problems"][:4] == [ds["prompt"][0]] * 4
    from utils.verifiers.arithmetic import strict_reward
    assert lab["truth"] == strict_reward(lab["completions"], [a for a in ds["answer"] for _ in range(4)])
    flipped = sum(a != b for a, b in zip(lab["labels"], lab["truth"])) / 800
    assert 0.2 < flipped < 0.3
    assert judging.rubric_labels(model, tok, ds["prompt"], ds["answer"], k=4, flip=0.25, seed=3) == lab
    assert judging.rubric_labels(model, tok, ds["prompt"], ds["answer"], k=4, flip=0.0, seed=3)["labels"] == \
        lab["truth"]
    monkeypatch.setattr(judging, "judge_probs", lambda judge, tok, p, c: [1.0] * len(c))
    rep = judging.judge_report(model, None, tok, ds["prompt"][:100], ds["answer"][:100], seed=0)
    assert rep["false_pos_rate"] == 1.0 and rep["false_neg_rate"] == 0.0 and rep["judge_mean"] == 1.0
    assert rep["auroc"] == 0.5   # one score for all: every right-wrong pair a tie
    assert 0 < rep["truth"] < 1 and 0 < rep["top_share"] <= 1


def test_a_judge_from_the_base_model_keeps_its_body_and_draws_its_head_from_the_seed():
    from utils.models.policy import load_policy

    base, tok = load_policy()
    j = jm.make_judge(tok, jm.JudgeConfig(init="rlvr-base", seed=3))
    assert (j.config.n_layer, j.config.n_embd) == (base.config.n_layer, base.config.n_embd)   # the model's size
    for (name, p), (_, q) in zip(j.transformer.named_parameters(), base.transformer.named_parameters()):
        assert torch.equal(p, q), name                                                         # its weights
    same, other = (jm.make_judge(tok, jm.JudgeConfig(init="rlvr-base", seed=s)) for s in (3, 4))
    assert torch.equal(j.score.weight, same.score.weight) and not torch.equal(j.score.weight, other.score.weight)
    assert j.score.weight.shape == (1, base.config.n_embd)
    p = jm.judge_probs(j.eval(), tok, ["12+5="], ["17"])
    assert len(p) == 1 and 0 < p[0] < 1
    # training fine-tunes the body too, not only the head
    cfg = jm.JudgeConfig(init="rlvr-base", steps=2, batch_size=2, lr=1e-3, seed=0)
    trained, _ = jm.train_judge(tok, ["1+2=", "3+4="], ["3", "8"], [1, 0], cfg, progress=False)
    assert not torch.equal(trained.transformer.h[0].attn.c_attn.weight, base.transformer.h[0].attn.c_attn.weight)


@pytest.mark.parametrize("cfg, tok, match", [
    (dict(init="gpt2"), None, "init must be one of"), (dict(init="rlvr-base", n_positions=64), None, "n_positions=64"),
    (dict(init="rlvr-base"), TOK, "another tokenizer")])
def test_a_bad_init_is_refused_by_name(cfg, tok, match):
    from utils.models.policy import load_policy

    with pytest.raises(ValueError, match=match):
        jm.make_judge(tok or load_policy()[1], jm.JudgeConfig(**cfg))


def test_pairs_are_a_right_and_a_wrong_completion_of_one_problem():
    pairs = jm._pairs(["a", "a", "a", "b", "b", "c"], torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0]))
    assert pairs.tolist() == [[0, 1], [0, 2]]      # b has no wrong completion, c no right one: neither makes a pair


def test_a_pairwise_judge_learns_to_rank_and_the_same_seed_gives_the_same_judge():
    p, c, y = _rule_data(400, 0)
    cfg = jm.JudgeConfig(**{**SMALL.__dict__, "loss": "pairwise"})
    judge, hist = jm.train_judge(TOK, p, c, y, cfg, progress=False)
    assert len(hist) == cfg.steps and hist[-1]["loss"] < hist[0]["loss"]
    hp, hc, hy = _rule_data(200, 1)
    probs = jm.judge_probs(judge, TOK, hp, hc)
    assert jm.verdict_rates(probs, hy)["auroc"] > 0.9     # it ranks; its threshold means nothing
    again, _ = jm.train_judge(TOK, p, c, y, cfg, progress=False)
    assert all(torch.equal(u, v) for u, v in zip(judge.state_dict().values(), again.state_dict().values()))


def test_a_pairwise_judge_without_a_pair_or_with_an_unknown_loss_is_refused_by_name():
    cfg = jm.JudgeConfig(**{**SMALL.__dict__, "loss": "pairwise"})
    with pytest.raises(ValueError, match="needs a problem with both"):
        jm.train_judge(TOK, ["1+2=", "3+4="], ["3", "8"], [1, 0], cfg, progress=False)
    with pytest.raises(ValueError, match="loss must be one of"):
        jm.train_judge(TOK, ["1+2="], ["3"], [1], jm.JudgeConfig(loss="listwise"), progress=False)


def test_pair_accuracy_by_hand():
    # problem a: right 0.9 against wrong 0.2 and 0.95 (one won, one lost); problem b: right 0.5 against wrong 0.5 (a
    # tie: a half); problem c has no wrong completion and no pair: (1 + 0 + 0.5) / 3
    probs, right, probs_of = [0.9, 0.2, 0.95, 0.5, 0.5, 0.7], [1, 0, 0, 1, 0, 1], ["a", "a", "a", "b", "b", "c"]
    assert jm.pair_accuracy(probs, right, probs_of) == pytest.approx(1.5 / 3)
    # a shift per problem changes nothing: the order within each problem is the same
    assert jm.pair_accuracy([0.1, 0.0, 0.15, 0.9, 0.9, 0.0], right, probs_of) == pytest.approx(1.5 / 3)
    assert math.isnan(jm.pair_accuracy([0.3], [1], ["a"]))
    with pytest.raises(ValueError, match="problems"):
        jm.pair_accuracy([0.3, 0.2], [1, 0], ["a"])

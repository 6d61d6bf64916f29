"""utils.rl.proposer and the problem grammar (utils.tasks.arithmetic.KINDS): the learnability rewards, the
proposer's REINFORCE step and its rollout, against values worked out by hand."""
import numpy as np
import pytest

from utils.models.policy import load_policy
from utils.rl.grpo import GRPOConfig
from utils.rl.loop import train_grpo
from utils.rl.proposer import Proposer, ProposerRollout, learnability
from utils.tasks.arithmetic import KINDS, kind_name, kind_problems


@pytest.mark.parametrize("p, azr, rzero", [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.25, 0.75, 0.5), (0.5, 0.5, 1.0),
                                           (0.75, 0.25, 0.5), (0.125, 0.875, 0.25)])
def test_learnability_by_hand(p, azr, rzero):
    assert learnability(p, "azr") == pytest.approx(azr) and learnability(p, "rzero") == pytest.approx(rzero)


@pytest.mark.parametrize("kw, match", [(dict(pass_rate=1.5), "pass_rate"), (dict(pass_rate=None), "pass_rate"),
                                       (dict(pass_rate=0.5, kind="gzero"), "kind must be one of")])
def test_learnability_bad_input_is_named(kw, match):
    with pytest.raises(ValueError, match=match):
        learnability(**kw)


def test_the_grammar_and_its_problems():
    assert len(KINDS) == 18 and (2, 1, "-") in KINDS and kind_name((2, 1, "-")) == "2-1 digits"
    rows = kind_problems((2, 1, "-"), 50, seed=3)
    assert len(rows) == len({r["prompt"] for r in rows}) == 50
    assert all(10 <= r["a"] <= 99 and 0 <= r["b"] <= 9 and int(r["answer"]) == r["a"] - r["b"] for r in rows)
    assert kind_problems((2, 1, "-"), 50, seed=3) == rows                       # seeded
    small = kind_problems((1, 1, "+"), 500, exclude={"3+4="})                   # only 100 exist, one excluded
    assert len(small) == 99 and "3+4=" not in {r["prompt"] for r in small}
    with pytest.raises(ValueError, match="kind must be one of KINDS"):
        kind_problems((4, 1, "+"), 5)


def test_one_reinforce_step_by_hand():
    # two kinds, uniform: rewards 1 and 0 -> advantages +0.5, -0.5; grad = mean of A (onehot - [0.5, 0.5])
    prop = Proposer(n_kinds=2, lr=2.0)
    grad = prop.update([0, 1], [1.0, 0.0])
    assert np.allclose(grad, [0.25, -0.25]) and np.allclose(prop.logits, [0.5, -0.5])
    assert np.allclose(prop.probs(), [1 / (1 + np.exp(-1)), 1 / (1 + np.exp(1))])
    # equal rewards: no advantage, no move; lr 0: no move whatever the rewards
    same = Proposer(n_kinds=3)
    assert np.allclose(same.update([0, 1, 2], [0.7, 0.7, 0.7]), 0) and np.allclose(same.logits, 0)
    frozen = Proposer(n_kinds=3, lr=0.0)
    frozen.update([0, 1], [1.0, 0.0])
    assert np.allclose(frozen.probs(), 1 / 3) and frozen.entropy() == pytest.approx(np.log(3))


def test_the_proposer_draws_by_its_probabilities():
    prop = Proposer(n_kinds=3, logits=[0.0, np.log(3), -1e9])
    draws = prop.draw(4000, np.random.default_rng(0))
    assert set(draws.tolist()) <= {0, 1} and abs((draws == 1).mean() - 0.75) < 0.03


@pytest.mark.parametrize("kw, match", [(dict(n_kinds=0), "n_kinds"), (dict(lr=-1), "lr"),
                                       (dict(n_kinds=2, logits=[0.0]), "logits must hold")])
def test_bad_proposer_is_named(kw, match):
    with pytest.raises(ValueError, match=match):
        Proposer(**kw)


def test_a_bad_update_is_named():
    with pytest.raises(ValueError, match="as long as each other"):
        Proposer(n_kinds=2).update([0], [1.0, 0.0])
    with pytest.raises(ValueError, match="indices below"):
        Proposer(n_kinds=2).update([2], [1.0])


CFG = dict(steps=3, batch_size=16, group_size=4, lr=1e-3, eval_every=0, eval_n=4, track_kl=False, seed=0)
PROMPTS = ["1+2=", "3+4=", "12+34=", "56+78="]
ANSWERS = ["3", "7", "46", "134"]


def first_two_right(completions, answer, **kw):
    """The first two prompts' groups pass half their completions, the others none: only kind 0 is learnable."""
    return [float(i % 2 == 0 and a in ("3", "7")) for i, a in enumerate(answer)]


def test_the_rollout_pays_the_proposer_for_learnable_kinds_and_keeps_the_anchor_out():
    policy, tok = load_policy()
    prop = Proposer(n_kinds=2, lr=5.0)
    ro = ProposerRollout(proposer=prop, kinds=[0, 0, 1, 1])
    hist = train_grpo(policy, tok, PROMPTS, ANSWERS, first_two_right, GRPOConfig(**CFG), progress=False, rollout=ro)
    assert len(ro.history) == 3 and all("proposer_entropy" in r for r in hist)
    assert prop.probs()[0] > 0.5                          # kind 0 (pass rate 0.5: learnability 0.5) gained
    for h in ro.history:                                   # what it paid is AZR's, for the kinds it drew
        assert h["learnability"] == pytest.approx(np.mean([0.5 if k == 0 else 0.0 for k in h["kinds"]]))
    # an anchor of 1.0: every prompt from the seed set, nothing paid to the proposer, which stays where it is
    still = Proposer(n_kinds=2, lr=5.0)
    anchored = ProposerRollout(proposer=still, kinds=[0, 0, 1, 1], anchor=1.0, anchor_idx=[2, 3])
    train_grpo(policy, tok, PROMPTS, ANSWERS, first_two_right, GRPOConfig(**CFG), progress=False, rollout=anchored)
    assert np.allclose(still.logits, 0) and all(h["learnability"] is None for h in anchored.history)


@pytest.mark.parametrize("kw, cfg, match", [
    (dict(proposer=None, kinds=[0, 0, 1, 1]), {}, "proposer must be a Proposer"),
    (dict(proposer=Proposer(n_kinds=2), kinds=[0, 0, 1]), {}, "kinds"),
    (dict(proposer=Proposer(n_kinds=2), kinds=[0, 0, 1, 2]), {}, "indices below"),
    (dict(proposer=Proposer(n_kinds=2), kinds=[0, 0, 1, 1], anchor=0.5), {}, "anchor_idx"),
    (dict(proposer=Proposer(n_kinds=2), kinds=[0, 0, 1, 1], reward="best"), {}, "reward must be one of"),
    (dict(proposer=Proposer(n_kinds=2), kinds=[0, 0, 1, 1]), dict(dynamic_sampling=True), "dynamic_sampling")])
def test_a_bad_rollout_is_named(kw, cfg, match):
    policy, tok = load_policy()
    with pytest.raises(ValueError, match=match):
        ProposerRollout(**kw).start(policy, tok, PROMPTS, ANSWERS, first_two_right, GRPOConfig(**CFG | cfg))


def test_a_kind_with_no_prompt_is_named_when_chosen():
    policy, tok = load_policy()
    ro = ProposerRollout(proposer=Proposer(n_kinds=3, logits=[-1e9, -1e9, 0.0]), kinds=[0, 0, 1, 1])
    with pytest.raises(ValueError, match="no prompt in the pool"):
        train_grpo(policy, tok, PROMPTS, ANSWERS, first_two_right, GRPOConfig(**CFG), progress=False, rollout=ro)


def test_the_band_takes_groups_outside_it_out_of_the_solvers_loss():
    policy, tok = load_policy()
    # kind 0's groups pass at 0.5, kind 1's at 0: a band of (0, 0.25) gates every kind-0 group, so nothing is paid
    ro = ProposerRollout(proposer=Proposer(n_kinds=2, lr=0.0), kinds=[0, 0, 1, 1], band=(0.0, 0.25))
    hist = train_grpo(policy, tok, PROMPTS, ANSWERS, first_two_right, GRPOConfig(**CFG), progress=False, rollout=ro)
    assert all(r["reward_mean"] == 0.0 for r in hist)
    assert [h["gated"] for h in ro.history] == [np.mean([k == 0 for k in h["kinds"]]) for h in ro.history]
    assert any(h["gated"] > 0 for h in ro.history)
    # the proposer is still paid by the group's own pass rate (0.5 -> AZR 0.5), before the gate
    assert all(h["learnability"] == pytest.approx(np.mean([0.5 if k == 0 else 0.0 for k in h["kinds"]]))
               for h in ro.history)
    # the whole range gates nothing
    wide = ProposerRollout(proposer=Proposer(n_kinds=2, lr=0.0), kinds=[0, 0, 1, 1], band=(0.0, 1.0))
    hist = train_grpo(policy, tok, PROMPTS, ANSWERS, first_two_right, GRPOConfig(**CFG), progress=False, rollout=wide)
    assert all(h["gated"] == 0.0 for h in wide.history) and any(r["reward_mean"] > 0 for r in hist)


@pytest.mark.parametrize("band, match", [((0.8, 0.2), "lo <= hi"), ((0.1,), "band"), ((0.1, 1.5), r"band\[1\]")])
def test_a_bad_band_is_named(band, match):
    policy, tok = load_policy()
    with pytest.raises(ValueError, match=match):
        ProposerRollout(proposer=Proposer(n_kinds=2), kinds=[0, 0, 1, 1], band=band).start(
            policy, tok, PROMPTS, ANSWERS, first_two_right, GRPOConfig(**CFG))


@pytest.mark.parametrize("p, G, azr, rzero", [
    (0.5, 2, 0.25, 0.5),       # j = 1 of 2 with chance 1/2 pays 0.5 (AZR) or 1.0 (R-Zero); j = 0 or 2 pays 0
    (0.0, 8, 0.0, 0.0),        # never right: every group has no spread
    (1.0, 8, 0.0, 0.0),
    (0.3, 1, 0.0, 0.0),        # a group of one never has spread
    (0.5, 4, 0.375 * 0.5 + 0.25 * 0.75 + 0.25 * 0.25, 0.375 * 1.0 + 0.5 * 0.5),   # j = 2 (6/16), j = 1, 3 (4/16 each)
])
def test_expected_learnability_by_hand(p, G, azr, rzero):
    from utils.rl.proposer import expected_learnability
    assert expected_learnability(p, "azr", G) == pytest.approx(azr)
    assert expected_learnability(p, "rzero", G) == pytest.approx(rzero)


def test_expected_learnability_peaks_where_the_module_says():
    # AZR's mean over a group of 8 is 1 - p - (1 - p)^8 (the j = 8 term pays 0 anyway): largest at (1 - p)^7 = 1/8
    from utils.rl.proposer import expected_learnability
    ps = np.linspace(0, 1, 1001)
    assert np.allclose(expected_learnability(ps, "azr"), 1 - ps - (1 - ps) ** 8)
    assert ps[np.argmax(expected_learnability(ps, "azr"))] == pytest.approx(1 - (1 / 8) ** (1 / 7), abs=1e-3)
    assert ps[np.argmax(expected_learnability(ps, "rzero"))] == pytest.approx(0.5)


@pytest.mark.parametrize("p, band, G, want", [(0.5, (0.25, 0.75), 2, 0.5), (0.5, (0.0, 1.0), 2, 1.0),
                                              (0.5, (0.5, 0.5), 4, 6 / 16), (0.0, (0.0, 0.0), 8, 1.0),
                                              (0.1, (0.125, 0.875), 8, 1 - 0.9 ** 8 - 0.1 ** 8)])
def test_band_share_by_hand(p, band, G, want):
    from utils.rl.proposer import band_share
    assert band_share(p, band, G) == pytest.approx(want)


@pytest.mark.parametrize("kw, match", [(dict(band=(0.8, 0.2)), "lo <= hi"), (dict(band=(0, 2)), "band"),
                                       (dict(p=1.5), "p must"), (dict(group_size=0), "group_size")])
def test_band_share_bad_input_is_named(kw, match):
    from utils.rl.proposer import band_share
    with pytest.raises(ValueError, match=match):
        band_share(**dict(dict(p=0.5, band=(0.2, 0.8)), **kw))


def test_fixed_solver_run_goes_where_its_reward_pays():
    from utils.rl.proposer import fixed_solver_run
    # kind 0 right half the time pays; kind 1 is never right, kind 2's problems are each always or never right:
    # neither pays, so the proposer leaves them
    h = fixed_solver_run([0.5, 0.0, [0.0, 1.0]], "azr", lr=1.0, steps=300, batch=32, seed=0)
    assert h.shape == (301, 3) and np.allclose(h[0], 1 / 3) and np.allclose(h.sum(1), 1)
    assert h[-1, 0] > 0.9
    assert np.array_equal(h, fixed_solver_run([0.5, 0.0, [0.0, 1.0]], "azr", lr=1.0, steps=300, batch=32, seed=0))
    # lr 0 stays uniform; no steps returns the start
    assert np.allclose(fixed_solver_run([0.5, 0.2], lr=0.0, steps=5), 0.5)
    assert fixed_solver_run([0.5, 0.2], steps=0).shape == (1, 2)
    # AZR pays 1 - p: of two kinds that split, the harder one wins; R-Zero's reward prefers the one nearer 1/2
    assert fixed_solver_run([0.5, 0.25], "azr", steps=400, seed=1)[-1, 1] > 0.8
    assert fixed_solver_run([0.5, 0.15], "rzero", steps=400, seed=1)[-1, 0] > 0.8


@pytest.mark.parametrize("kw, match", [(dict(rates=[]), "rates"), (dict(rates=[0.5, 1.5]), "rates"),
                                       (dict(rates=[0.5, []]), "rates"), (dict(kind="x"), "kind"),
                                       (dict(steps=-1), "steps"), (dict(seed="x"), "seed")])
def test_fixed_solver_run_bad_input_is_named(kw, match):
    from utils.rl.proposer import fixed_solver_run
    with pytest.raises(ValueError, match=match):
        fixed_solver_run(**dict(dict(rates=[0.5, 0.2], steps=2), **kw))


def test_kind_sets_are_disjoint_and_held_out():
    from utils.tasks.arithmetic import kind_sets, load_split
    pool, evals = kind_sets(pool_n=30, eval_n=5)
    held = {p for s in ("test", "valid", "ood") for p in load_split(s)["prompt"]}
    train = set(load_split("train")["prompt"])
    assert len(evals) == 18 * 5 and len(pool) == 18 * 30
    assert not {r["prompt"] for r in evals} & (held | train | {r["prompt"] for r in pool})
    assert not {r["prompt"] for r in pool} & held
    assert all(KINDS[r["kind"]] == (len(str(r["a"])), len(str(r["b"])), r["op"]) for r in pool + evals)
    assert kind_sets(pool_n=30, eval_n=5) == (pool, evals)

"""utils.eval.traces (the cap check, the metrics) and utils.runs.traces (a tiny run), worked out by hand."""
import pytest
import torch

from utils.eval.traces import best_of_n, check_cap, length_controlled, max_cap, min_cap, trace_metrics
from utils.models.policy import TRACE, load_policy
from utils.rl.grpo import GRPOConfig
from utils.runs.traces import train_on_traces
from utils.verifiers import traces


@pytest.fixture(scope="module")
def trace_model():
    return load_policy(TRACE)


def rows(*pairs):
    return {"prompt": [f"{a}+{b}:" for a, b in pairs], "a": [a for a, _ in pairs], "b": [b for _, b in pairs],
            "answer": [str(a + b) for a, b in pairs]}


def test_min_and_max_cap_by_hand(trace_model):
    _, tok = trace_model
    # "5+7+0=12 0+9+1=10 >102": 22 characters, one token each, + EOS
    assert min_cap(tok, rows((5, 97))) == 23 == max_cap(tok, rows((5, 97)))
    # "2+3+0=5 1+0+0=1 >15": 19 characters + EOS
    assert min_cap(tok, rows((5, 97), (12, 3))) == 20 and max_cap(tok, rows((5, 97), (12, 3))) == 23


def test_check_cap_names_the_field(trace_model):
    _, tok = trace_model
    check_cap(20, tok, rows((12, 3)))  # exactly enough: no error
    with pytest.raises(ValueError, match=r"GRPOConfig.max_new_tokens=19 .*at least 20"):
        check_cap(19, tok, rows((12, 3)))
    with pytest.raises(ValueError, match="at least one problem"):
        min_cap(tok, rows())


def test_train_on_traces_refuses_a_short_cap_before_training(trace_model):
    base, tok = trace_model
    before = [p.clone() for p in base.parameters()]
    cfg = GRPOConfig(steps=1, batch_size=8, group_size=4, max_new_tokens=16)
    with pytest.raises(ValueError, match="max_new_tokens=16"):
        train_on_traces(base, tok, traces.outcome_reward, cfg, rows((12, 3), (5, 97)), rows((1, 2)), progress=False)
    assert all(torch.equal(a, b) for a, b in zip(before, base.parameters()))


class Scripted:
    """Stands in for sample(): fixed texts, masks and truncation flags (what trace_metrics reads)."""


def test_trace_metrics_by_hand(monkeypatch, trace_model):
    model, tok = trace_model
    from utils.eval import traces as trace_eval

    texts = ["2+3+0=5 1+0+0=1 >15", "2+3+0=5 >15", "2+3+0=5 1+0+0=1 >16", "2+3+0=5 1+0+"]
    ro = Scripted()
    ro.texts = texts
    ro.completion_mask = torch.tensor([[1] * 20, [1] * 12 + [0] * 8, [1] * 20, [1] * 12 + [0] * 8])  # lengths
    ro.completion_mask[3, :] = 1  # the cut one ran to the cap: 20 tokens, no EOS
    ro.truncated = torch.tensor([False, False, False, True])
    monkeypatch.setattr(trace_eval, "sample_in_batches", lambda *a, **k: iter([(0, ro)]))
    m = trace_metrics(model, tok, rows((12, 3), (12, 3)), k=2)
    # answers right: 1st and 2nd; CoT right: 1st only; steps exact: 1st and 3rd; well formed: first three
    assert m["pass@1"] == 0.5 and m["cot_pass@1"] == 0.25 and m["steps_exact"] == 0.5
    assert m["well_formed"] == 0.75 and m["truncated"] == 0.25
    assert m["length"] == (20 + 12 + 20 + 20) / 4 and m["length_right"] == 16 and m["length_wrong"] == 20
    # process: 1, 1/2 (one of two steps), 1, 1/2 (the second token does not parse) -> 0.75
    assert m["process_score"] == 0.75 and m["by_digits"] == {} and m["extra_steps"] == 0.0
    assert m["by_length"] == {12: [1, 1], 20: [3, 1]}  # lengths 20, 12, 20, 20; right: the first two
    ro.texts = ["2+3+0=5 1+0+0=1 2+3+0=5 1+0+0=1 >15", "2+3+0=5 >15", "2+3+0=5 2+3+0=5 9+9+0=18 >15", "x"]
    m = trace_metrics(model, tok, rows((12, 3), (12, 3)), k=2)
    assert m["extra_steps"] == (2 + 0 + 1 + 0) / 4  # padding
    # a check pass: the first step again two or more steps on; only the first (the third's repeat is a padded
    # step, next to itself); the three right answers are the first three
    assert m["checked"] == 0.25 and m["checked_right"] == 1 / 3 and m["checked_wrong"] == 0.0
    r = rows((12, 3), (123, 4))
    r["digits"] = [2, 3]
    m = trace_metrics(model, tok, r, k=2)  # the first two samples are problem 12+3's, the last two 123+4's
    assert m["by_digits"] == {2: {"pass@1": 1.0, "length": 16.0, "length_right": 16.0, "length_wrong": None,
                                  "truncated": 0.0, "checked": 0.5},
                              3: {"pass@1": 0.0, "length": 20.0, "length_right": None, "length_wrong": 20.0,
                                  "truncated": 0.5, "checked": 0.0}}
    with pytest.raises(ValueError, match="k=0 must be an integer >= 1"):
        trace_metrics(model, tok, rows((12, 3)), k=0)


def test_length_controlled_by_hand():
    """a: 10 samples at 30 tokens (5 right), 10 at 31 (10 right); b: 30 at 30 (15 right), 10 at 40 (none).
    Raw: 15/20 - 15/40 = 0.375. Only 30 tokens is shared, where both score 0.5: controlled 0.0, over
    (10 + 30) / 60 of the samples. a looked better only by the lengths it wrote."""
    a, b = {"by_length": {30: [10, 5], 31: [10, 10]}}, {"30": [30, 15], "40": [10, 0]}  # b as read from JSON
    r = length_controlled(a, b)
    assert r["raw"] == pytest.approx(0.375) and r["controlled"] == 0.0 and r["overlap"] == pytest.approx(40 / 60)
    # two shared lengths, weighted by the pooled samples: at 30, 0.5 - 0.25 (weight 20 + 4); at 31, 1.0 - 0.5 (10 + 2)
    r = length_controlled({30: [20, 10], 31: [10, 10]}, {30: [4, 1], 31: [2, 1]})
    assert r["controlled"] == pytest.approx((24 * 0.25 + 12 * 0.5) / 36) and r["overlap"] == 1.0
    assert length_controlled({30: [5, 5]}, {40: [5, 0]}) == {"raw": 1.0, "controlled": None, "overlap": 0.0}
    with pytest.raises(ValueError, match="length_controlled: b must be"):
        length_controlled(a, None)


def test_train_on_traces_tiny_run_is_seeded(trace_model):
    base, tok = trace_model
    train = rows((12, 3), (5, 97), (40, 44), (71, 8))
    cfg = GRPOConfig(steps=2, batch_size=8, group_size=4, lr=1e-4, max_new_tokens=24, eval_every=2, eval_n=2,
                     track_kl=False)
    one = train_on_traces(base, tok, traces.outcome_reward, cfg, train, rows((3, 4), (10, 20)), eval_k=1,
                          progress=False)
    two = train_on_traces(base, tok, traces.outcome_reward, cfg, train, rows((3, 4), (10, 20)), eval_k=1,
                          progress=False)
    assert one["final"] == two["final"] and [h["reward_mean"] for h in one["history"]] == \
        [h["reward_mean"] for h in two["history"]]
    assert one["config"]["max_new_tokens"] == 24 and len(one["history"]) == 2
    assert one["model"] is not base and "truncated_frac" in one["history"][0]


def test_heldout_curve_by_hand():
    from utils.eval.traces import heldout_curve
    hist = [{"completions_sampled": 64, "heldout_pass@1": None, "train_seconds": 1.0},
            {"completions_sampled": 128, "heldout_pass@1": 0.4, "train_seconds": 2.5},
            {"completions_sampled": 64, "heldout_pass@1": 0.5, "train_seconds": 3.0}]
    assert heldout_curve(hist, 0.3) == ((0, 192, 256), (0.3, 0.4, 0.5))
    assert heldout_curve(hist, 0.3, x="seconds") == ((0, 2.5, 3.0), (0.3, 0.4, 0.5))
    with pytest.raises(ValueError, match="x='steps'"):
        heldout_curve(hist, 0.3, x="steps")


def test_best_of_n_by_hand(monkeypatch, trace_model):
    """Problem 12+3 (15), n=4: the vote goes to a wrong answer two samples share; the step verdicts pick the one
    sample whose steps are all valid. Problem 12+4 (16): no sample right, so no rule can be."""
    model, tok = trace_model
    from utils.eval import traces as trace_eval

    ro = Scripted()
    ro.texts = ["2+3+0=5 1+0+0=1 >16", "2+3+0=5 1+0+0=1 >16", "2+3+0=5 1+0+0=1 >15", "2+3+0=6 1+0+0=1 >15",
                "x", "2+4+0=6 >6", "2+4+0=7 1+0+0=1 >17", "2+4+0=6 1+0+0=2 >26"]
    monkeypatch.setattr(trace_eval, "sample_in_batches", lambda *a, **k: iter([(0, ro)]))
    got = best_of_n(model, tok, rows((12, 3), (12, 4)), n=4)
    # one sample: 2 of 4 right, then 0 of 4 -> 0.25; majority: '16' (twice, first) wrong, then '6'/'17'/'26'
    # (once each: the first, '6') wrong; step verdicts: sample 3 (all valid), then the best of the wrong ones
    assert got == {"one sample": 0.25, "majority vote": 0.0, "step verdicts": 0.5, "any of n": 0.5, "n": 4}
    ro.texts = ro.texts[2:4] + ro.texts[:2] + ro.texts[4:]   # the two '15's first: the vote is right now
    assert best_of_n(model, tok, rows((12, 3), (12, 4)), n=4)["majority vote"] == 0.5
    with pytest.raises(ValueError, match="n=0 must be an integer >= 1"):
        best_of_n(model, tok, rows((12, 3)), n=0)


def test_train_on_traces_takes_steps_or_pruning_not_both(trace_model):
    model, tok = trace_model
    from utils.tasks import scratchpad
    with pytest.raises(ValueError, match="steps_fn or prune"):
        train_on_traces(model, tok, traces.outcome_reward, GRPOConfig(steps=1, batch_size=8, group_size=8,
                                                                      max_new_tokens=64),
                        scratchpad.load_split("train"), scratchpad.load_split("test"), steps_fn=traces.step_verdicts,
                        prune=2)

"""utils.rl.staleness (Lab 10): the pipeline model, the drift probe and its summary, a low-precision sampler's
log-ratios; and the widget that shows the probe's ratios."""
import copy
import math

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from tolerance import tolerance  # noqa: E402

from utils.models.policy import load_policy, sample  # noqa: E402
from utils.rl.grpo import GRPOConfig  # noqa: E402
from utils.rl.loop import train_grpo  # noqa: E402
from utils.rl.rollout import cast  # noqa: E402
from utils.rl.staleness import drift_of, drift_probe, drift_summary, sampler_log_ratios, step_seconds  # noqa

PROMPTS, ANSWERS = ["12+34=", "5+6=", "7+8=", "1+1="], ["46", "11", "15", "2"]
CFG = GRPOConfig(steps=5, batch_size=8, group_size=4, lr=1e-2, eval_every=0, eval_n=4, track_kl=False, seed=0)


def half_right(completions, answer, **kw):
    return [float(i % 2) for i in range(len(completions))]  # every group has spread: nonzero advantages


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# ---------------------------------------------------------------- step_seconds, by hand

@pytest.mark.parametrize("sample_s, update_s, lag, want", [
    (1.0, 0.5, 0, 1.5),    # in turn: the sum
    (1.0, 0.5, 1, 1.0),    # one sampler beside the learner: the slower half
    (1.0, 0.5, 2, 0.5),    # two samplers: sampling / 2 = training
    (1.0, 0.2, 2, 0.5),    # sampling / 2 still the slower
    (0.3, 0.5, 4, 0.5),    # training the slower: more samplers buy nothing
])
def test_step_seconds_by_hand(sample_s, update_s, lag, want):
    assert step_seconds(sample_s, update_s, lag) == pytest.approx(want)


@pytest.mark.parametrize("args, match", [((-1.0, 0.5, 0), "sample_s"), ((1.0, None, 0), "update_s"),
                                         ((1.0, 0.5, 1.5), "lag"), ((1.0, 0.5, -1), "lag")])
def test_step_seconds_refuses_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        step_seconds(*args)


# ---------------------------------------------------------------- drift_summary, by hand

def test_drift_summary_by_hand():
    L = math.log
    drift = {"token": [[0.0, 0.0], [L(1.5), L(0.5), 0.1, L(4.0)]],
             "sequence": [[0.0], [L(4.0) + L(1.5), L(0.5) + 0.1]]}     # sequence ratios 6 and 0.55
    k0, k1 = drift_summary(drift, eps_low=0.2, eps_high=0.2, is_max=3.0)
    assert k0 == {"k": 0, "mean_abs_log_ratio": 0.0, "kl": 0.0, "outside_clip": 0.0, "token_capped": 0.0,
                  "sequence_masked": 0.0}
    assert k1["k"] == 1
    assert k1["mean_abs_log_ratio"] == pytest.approx((L(1.5) + L(2.0) + 0.1 + L(4.0)) / 4)
    # k3 = r - 1 - log r per token: 1.5 -> 0.5 - log 1.5, 0.5 -> -0.5 + log 2, e^0.1 -> e^0.1 - 1.1, 4 -> 3 - log 4
    assert k1["kl"] == pytest.approx((0.5 - L(1.5) - 0.5 + L(2.0) + math.exp(0.1) - 1.1 + 3 - L(4.0)) / 4)
    assert k1["outside_clip"] == pytest.approx(3 / 4)   # 1.5, 0.5 and 4 are outside [0.8, 1.2]; e^0.1 = 1.105 in
    assert k1["token_capped"] == pytest.approx(1 / 4)   # only 4 > 3
    assert k1["sequence_masked"] == pytest.approx(1 / 2)  # 6 > 3; 0.55 is not above the cap
    wide = drift_summary(drift, eps_low=0.6, eps_high=4.0, is_max=10.0)[1]
    assert wide["outside_clip"] == 0.0 and wide["token_capped"] == 0.0 and wide["sequence_masked"] == 0.0


@pytest.mark.parametrize("bad", [None, {}, {"token": [[0.0]]}, {"token": [], "sequence": []},
                                 {"token": [[0.0]], "sequence": [[0.0], [0.0]]}])
def test_drift_summary_refuses_what_is_not_a_drift(bad):
    with pytest.raises(ValueError, match="drift must be drift_of's dict"):
        drift_summary(bad)


def test_drift_summary_names_a_log_ratio_that_is_not_finite():
    """A log-ratio of inf or NaN (a token one policy cannot write) has no mean: named, never a NaN KL (issue 60)."""
    for bad in (math.inf, math.nan):
        with pytest.raises(ValueError, match=r"drift\['token'\]\[1\] holds NaN or inf"):
            drift_summary({"token": [[0.0], [0.1, bad]], "sequence": [[0.0], [0.1]]})


# ---------------------------------------------------------------- the probe in a run

def logprob_tolerance(model, tok, prompts, k):
    """tests/tolerance.py's tolerance for the log-probs of k completions of each prompt, drawn as the samplers below
    draw them: a log-ratio of two implementations at the same weights (a forward pass against the sampler's own
    log-probs) is their rounding, no more."""
    return tolerance(sample(model, tok, prompts, k=k, generator=torch.Generator().manual_seed(0)).logprobs)


def train(callback=None):
    base, tok = load_policy()
    policy = copy.deepcopy(base)
    hist = train_grpo(policy, tok, PROMPTS, ANSWERS, half_right, CFG, progress=False, callback=callback)
    return policy, tok, hist


def test_drift_probe_measures_and_leaves_the_run_as_it_is():
    plain, tok, plain_hist = train()
    probed, _, hist = train(drift_probe(tok, PROMPTS, CFG, at=2, lags=3, n_prompts=2))
    for a, b in zip(plain.state_dict().values(), probed.state_dict().values()):
        assert torch.equal(a, b), "the probe changed the run's training"
    assert [h["reward_mean"] for h in hist] == [h["reward_mean"] for h in plain_hist]
    d = drift_of(hist)
    assert d["at"] == 2 and len(d["token"]) == len(d["sequence"]) == 4           # k = 0, 1, 2, 3
    assert all(len(s) == 2 * CFG.group_size for s in d["sequence"])              # n_prompts * G completions
    tol = logprob_tolerance(probed, tok, PROMPTS[:2], CFG.group_size)   # the probe's prompts, at about its scale
    assert max(abs(x) for x in d["token"][0]) <= tol                              # k = 0: the sampler itself
    assert all(len(t) == len(d["token"][0]) for t in d["token"])                  # the same batch each k
    for t, s in zip(d["token"], d["sequence"]):                                   # a sequence's = its tokens' sum
        assert sum(s) == pytest.approx(sum(t), abs=1e-4)
    assert max(abs(x) for x in d["token"][3]) > 1e-3                              # three steps at lr 1e-2 move it
    assert [h["step"] for h in hist if "drift_token" in h] == [2, 3, 4, 5]


def test_drift_of_without_a_probe_says_what_to_do():
    with pytest.raises(ValueError, match="callback=drift_probe"):
        drift_of([{"step": 1, "reward_mean": 0.5}])
    with pytest.raises(ValueError, match="callback=drift_probe"):
        drift_of(None)


def test_drift_probe_refuses_bad_input(shipped):
    _, tok = shipped
    with pytest.raises(ValueError, match="cfg must be a GRPOConfig"):
        drift_probe(tok, PROMPTS, {"group_size": 4})
    with pytest.raises(ValueError, match="at"):
        drift_probe(tok, PROMPTS, CFG, at=0)
    with pytest.raises(ValueError, match="prompts"):
        drift_probe(tok, "12+34=", CFG)


# ---------------------------------------------------------------- a low-precision sampler

def test_sampler_log_ratios_same_model_and_bfloat16(shipped):
    model, tok = shipped
    same, mask = sampler_log_ratios(model, cast(model, "float32"), tok, PROMPTS, k=4, seed=0)
    assert same.shape == mask.shape and same.shape[0] == 16
    assert same.abs().max().item() <= logprob_tolerance(model, tok, PROMPTS, 4)  # the same numbers, to rounding
    bf16, mask16 = sampler_log_ratios(model, cast(model, "bfloat16"), tok, PROMPTS, k=4, seed=0)
    assert bf16[mask16.bool()].abs().mean().item() > 1e-4                        # rounding shows
    assert (bf16[~mask16.bool()] == 0).all()                                     # nothing off the mask
    again, _ = sampler_log_ratios(model, cast(model, "bfloat16"), tok, PROMPTS, k=4, seed=0)
    assert torch.equal(bf16, again)                                              # same seed, same numbers


def test_cast_refuses_an_unknown_dtype(shipped):
    model, _ = shipped
    with pytest.raises(ValueError, match="dtype must be one of"):
        cast(model, "int8")
    assert next(cast(model, "bfloat16").parameters()).dtype == torch.bfloat16
    assert next(model.parameters()).dtype == torch.float32                      # the original is untouched


# ---------------------------------------------------------------- the widget

DRIFT = {"token": [[0.0] * 4, [0.1, -0.3, 0.5, 1.5]], "sequence": [[0.0, 0.0], [0.2, 1.8]], "at": 50}


def test_ratio_view_titles_are_the_summary():
    from utils.notebook.widgets import ratio_view

    fig = ratio_view(DRIFT, 1)
    row = drift_summary(DRIFT)[1]
    left, right = fig.axes[0].get_title(), fig.axes[1].get_title()
    assert f"{row['mean_abs_log_ratio']:.3f}" in left and f"{100 * row['outside_clip']:.1f}%" in left
    assert f"{100 * row['sequence_masked']:.1f}%" in right                        # 1.8 > log 3: one of two
    assert "1 step ahead" in fig._suptitle.get_text() and "step 50" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="k"):
        ratio_view(DRIFT, 2)


def test_ratio_explorer_widget():
    import ipywidgets as w

    from utils.notebook.widgets import ratio_explorer

    box = ratio_explorer(DRIFT, default_k=1)
    k, out = box.children
    assert (k.min, k.max, k.value) == (0, 1, 1) and isinstance(out, w.Output)
    k.value = 0                                                                  # redraws without error
    with pytest.raises(ValueError, match="default_k"):
        ratio_explorer(DRIFT, default_k=5)

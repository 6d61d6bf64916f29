"""The random-reward control (Lab 03). Before crediting a gain to the verifier, train again with a
reward that carries no information, matched in rate, and everything else equal. If that run gains
too, the gain is not (only) the verifier's. Spurious rewards: arXiv 2506.10947; contamination as
the explanation of the Qwen2.5-Math result: arXiv 2507.10532. The runs themselves: utils.runs.control.
"""
import numpy as np

from utils import checks
from utils.eval.metrics import evaluate
from utils.verifiers.arithmetic import strict_reward

THRESHOLD = 0.05  # a random-reward change of more than 5 points of held-out accuracy, either way, is reported
# control_check's three verdicts (its "verdict" value is exactly one of these):
NOT_ONLY_VERIFIER = "not only the verifier"  # random gain > threshold: training itself raised accuracy
CONTROL_HARMFUL = "control harmful"  # random gain < -threshold: training itself cost accuracy
NEUTRAL = "neutral control: the gain is the verifier's"  # the random run moved accuracy by at most the threshold
VERDICTS = (NOT_ONLY_VERIFIER, CONTROL_HARMFUL, NEUTRAL)
N_SHOWN = 12  # greedy answers kept per run, to show beside the numbers


def hit_rate(model, tokenizer, prompts, answers, reward_fn=strict_reward, k=8, seed=0, max_new_tokens=8):
    """p: the share of sampled completions (k per prompt, temperature 1) that reward_fn pays for."""
    return evaluate(model, tokenizer, prompts, answers, k=k, reward_fn=reward_fn, seed=seed,
                    max_new_tokens=max_new_tokens)["pass@1"]


def check_same_config(runs):
    """Raise ValueError unless every run used the same config apart from the seed.
    runs: {condition: [run dicts with a 'config' dict]}."""
    _check_runs("check_same_config", runs)
    ref, ref_name = None, None
    for name, rs in runs.items():
        for r in rs:
            cfg = dict(r["config"], seed=None)
            if ref is None:
                ref, ref_name = cfg, name
            elif cfg != ref:
                diff = sorted(k for k in ref if ref[k] != cfg.get(k))
                raise ValueError(f"runs differ in more than the seed: {name!r} vs {ref_name!r} differ in {diff}. "
                                 f"A control is only a control if everything else is equal.")


def _check_runs(where, runs, key=None, inside="runs"):
    """ValueError naming the condition and the run unless runs is {condition: a list of run dicts}, each with a
    'config' dict (and, with key, an 'after' report holding a finite number under key). inside: the argument
    that holds the conditions (None: each condition is an argument of its own, e.g. true_runs)."""
    if not isinstance(runs, dict):
        raise ValueError(f"{where}: runs must be a dict {{condition: [run dicts]}}, got {checks._short(runs)}")
    for cond, rs in runs.items():
        name = f"{inside}[{cond!r}]" if inside else cond
        for i, r in enumerate(checks.sequence(where, name, rs)):
            if not isinstance(r, dict) or not isinstance(r.get("config"), dict):
                raise ValueError(f"{where}: {name}[{i}] must be a run dict with a 'config' dict (as the runs of "
                                 f"utils.runs.control return), got {checks._short(r)}")
            if key is not None:
                if not isinstance(r.get("after"), dict) or key not in r["after"]:
                    raise ValueError(f"{where}: {name}[{i}] must hold its 'after' report with {key!r}, got "
                                     f"{checks._short(r)}")
                checks.number(where, f"{name}[{i}]['after'][{key!r}]", r["after"][key])


def control_check(before, true_runs, random_runs, threshold=THRESHOLD, key="pass@1"):
    """Compare held-out `key` gains (after minus before, a mean over runs). before: policy_report of the base
    model; *_runs: lists of run dicts with the same config apart from the seed. Two-sided: a control must be
    neutral, so a random-reward run that moves accuracy by more than `threshold` either way is reported.
    Returns a dict:
      true_gain, random_gain  the mean gains of the true-reward and the random-reward runs
      flagged  random_gain > threshold: the random reward gained too, so the gain is not only the verifier's
      harmed   random_gain < -threshold: training itself costs accuracy; the control is not neutral, so it
               cannot say what share of the true reward's gain is the verifier's
      verdict  NOT_ONLY_VERIFIER if flagged, CONTROL_HARMFUL if harmed, NEUTRAL otherwise (exactly at
               +threshold or -threshold is NEUTRAL: the threshold itself is allowed)
      message  the verdict in a sentence, with the numbers"""
    where = "control_check"
    threshold = checks.number(where, "threshold", threshold, lo=0)
    if not isinstance(key, str) or not key:
        raise ValueError(f"{where}: key must be the name of a report's number (e.g. 'pass@1'), got "
                         f"{checks._short(key)}")
    if not isinstance(before, dict) or key not in before:
        raise ValueError(f"{where}: before must be the base model's report (a dict with key={key!r}, from "
                         f"policy_report), got {checks._short(before)}")
    checks.number(where, f"before[{key!r}]", before[key])
    for name, runs in (("true_runs", true_runs), ("random_runs", random_runs)):
        runs = checks.sequence(where, name, runs)
        if not runs:
            raise ValueError(f"control_check needs at least one run of each condition (true and random): {name} "
                             f"is empty")
        _check_runs(where, {name: runs}, key, inside=None)
    check_same_config({"true": true_runs, "random": random_runs})
    gain = lambda runs: float(np.mean([r["after"][key] - before[key] for r in runs]))  # noqa: E731
    g_true, g_rand = gain(true_runs), gain(random_runs)
    flagged, harmed = g_rand > threshold, g_rand < -threshold
    moved = (f"the random reward changed held-out {key} by {100 * g_rand:+.1f} points, "
             f"the true reward by {100 * g_true:+.1f}")
    if flagged:
        verdict = NOT_ONLY_VERIFIER
        msg = (f"FLAG ({verdict}): {moved}; the random gain is above +{100 * threshold:.0f} points. "
               f"Part of the gain comes from training itself, not the verifier.")
    elif harmed:
        verdict = CONTROL_HARMFUL
        msg = (f"HARMED ({verdict}): {moved}; the random change is below -{100 * threshold:.0f} points. "
               f"Training itself costs accuracy, so the control is not neutral and cannot say what share of the "
               f"true reward's gain is the verifier's: rerun both where the random reward is near neutral "
               f"(e.g. a smaller learning rate).")
    else:
        verdict = NEUTRAL
        msg = (f"OK ({verdict}): {moved}; the random change is within +/-{100 * threshold:.0f} points. "
               f"The gain is the verifier's.")
    return {"true_gain": g_true, "random_gain": g_rand, "flagged": flagged, "harmed": harmed, "verdict": verdict,
            "message": msg}

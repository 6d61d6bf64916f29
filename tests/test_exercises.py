"""utils.notebook.exercises: a right answer is kept, a missing one falls back with a NOTE, a wrong one fails."""
import numpy as np
import pytest
import torch

from utils.eval.control import control_check
from utils.notebook.exercises import ExerciseError, check_group_advantages, check_policy_loss
from utils.rl import grpo


# ---------------------------------------------------------------- advantages
def my_group_advantages(rewards, group_size, scale_std=True, baseline="mean", eps=1e-4):
    r = torch.as_tensor(rewards, dtype=torch.float32).view(-1, group_size)
    a = r - (r.mean(1, keepdim=True) if baseline == "mean" else r.quantile(0.5, dim=1, keepdim=True))
    if scale_std:
        a = a / (r.std(1, unbiased=False, keepdim=True) + eps)
    return a.view(-1)


def test_check_advantages_correct_returns_learner_fn(capsys):
    assert check_group_advantages(my_group_advantages) is my_group_advantages
    out = capsys.readouterr().out
    assert out.startswith("OK") and "NOTE" not in out


def test_check_advantages_not_written_falls_back(capsys):
    def stub(rewards, group_size, scale_std=True, baseline="mean"):
        raise NotImplementedError
    assert check_group_advantages(stub) is grpo.group_advantages
    out = capsys.readouterr().out
    assert out.startswith("NOTE") and "group_advantages" in out


@pytest.mark.parametrize("wrong", [
    # sample std (unbiased=True) instead of the population std
    lambda r, g, s=True, b="mean": (lambda x: ((x - x.mean(1, keepdim=True)) /
                                    ((x.std(1, keepdim=True) + 1e-4) if s else 1)).view(-1))(
        torch.as_tensor(r, dtype=torch.float32).view(-1, g)),
    # forgets to subtract the baseline
    lambda r, g, s=True, b="mean": torch.as_tensor(r, dtype=torch.float32),
    # wrong shape: [n_groups, G] instead of [N]
    lambda r, g, s=True, b="mean": my_group_advantages(r, g, s, b).view(-1, g),
])
def test_check_advantages_wrong_raises(wrong, capsys):
    with pytest.raises(ExerciseError, match="expected") as e:
        check_group_advantages(wrong)
    assert "Hint" in str(e.value)
    assert "NOTE" not in capsys.readouterr().out


def test_check_advantages_wrong_shape_message():
    with pytest.raises(ExerciseError, match=r"expected shape \(12,\), got \(3, 4\)"):
        check_group_advantages(lambda r, g, s=True, b="mean": my_group_advantages(r, g, s, b).view(-1, g))


def test_exercise_error_is_an_assertion_error():
    # so nbval / pytest show it as a failed check, not a crash
    assert issubclass(ExerciseError, AssertionError)


# ---------------------------------------------------------------- policy loss
def my_policy_loss(logp, old_logp, ref_logp, adv, mask, eps_low=0.2, eps_high=0.2, beta=0.0,
                   loss_type="grpo", max_len=None):
    m = mask.float()
    ratio = torch.exp(logp - old_logp)
    a = adv[:, None]
    per_token = -torch.min(ratio * a, ratio.clamp(1 - eps_low, 1 + eps_high) * a)
    if beta:
        d = ref_logp - logp
        per_token = per_token + beta * (d.exp() - d - 1)
    if loss_type == "grpo":
        return ((per_token * m).sum(1) / m.sum(1)).mean()
    if loss_type == "dapo":
        return (per_token * m).sum() / m.sum()
    return (per_token * m).sum() / (logp.shape[0] * max_len)


def test_check_policy_loss_correct_returns_learner_fn(capsys):
    assert check_policy_loss(my_policy_loss) is my_policy_loss
    assert capsys.readouterr().out.startswith("OK")
    # one contract: the loss alone, as the reference returns it; a (loss, stats) pair is refused by name
    tupled = lambda *a: (my_policy_loss(*a), {})  # noqa: E731
    with pytest.raises(ExerciseError, match="scalar tensor"):
        check_policy_loss(tupled)


def test_check_policy_loss_not_written_falls_back(capsys):
    def stub(*args):
        raise NotImplementedError
    assert check_policy_loss(stub) is grpo.policy_loss
    out = capsys.readouterr().out
    assert out.startswith("NOTE") and "policy_loss" in out


@pytest.mark.parametrize("mistake", ["no_clip", "symmetric_clip", "no_mask", "no_kl", "sign"])
def test_check_policy_loss_wrong_raises(mistake):
    def wrong(logp, old_logp, ref_logp, adv, mask, eps_low=0.2, eps_high=0.2, beta=0.0, loss_type="grpo",
              max_len=None):
        if mistake == "no_clip":
            eps_low = eps_high = 100.0
        if mistake == "symmetric_clip":
            eps_high = eps_low
        if mistake == "no_mask":
            mask = torch.ones_like(mask)
        if mistake == "no_kl":
            beta = 0.0
        loss = my_policy_loss(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, loss_type, max_len)
        return -loss if mistake == "sign" else loss
    with pytest.raises(ExerciseError, match="expected") as e:
        check_policy_loss(wrong)
    assert "Hint" in str(e.value)


def test_other_exceptions_propagate():
    # a learner's bug (not a stub) must surface, not be swallowed by the fallback: as one ExerciseError that says
    # what was raised and on which line of the learner's function
    def buggy(*args):
        raise TypeError("oops")
    with pytest.raises(ExerciseError, match=r"my_policy_loss raised TypeError: oops \(line \d+ of buggy"):
        check_policy_loss(buggy)


# ----------------------------------------------------------------------------------- Lab 02 checks
from utils.notebook.exercises import check_breaking_cases, check_careful_match  # noqa: E402
from utils.verifiers.arithmetic import careful_match, last_number_match, strict_match  # noqa: E402


def test_check_verifier_accepts_reference(capsys):
    assert check_careful_match(careful_match) is careful_match
    assert capsys.readouterr().out.count("OK:") == 3   # the shipped suite, the hidden cases, the generated ones


def test_check_verifier_not_written_falls_back(capsys):
    def stub(text, answer):
        raise NotImplementedError
    assert check_careful_match(stub) is careful_match
    assert "NOTE" in capsys.readouterr().out


def test_check_verifier_strict_fails_on_hidden_cases():
    """strict passes the shipped suite (96%) but refuses the hidden '-12,345', '100.' ...: 71%."""
    with pytest.raises(ExerciseError, match=r"(?s)hidden cases: coverage 71%.*-12,345"):
        check_careful_match(strict_match)


def test_check_verifier_reports_false_positives_first():
    with pytest.raises(ExerciseError, match=r"(?s)false positive.*label 0.0"):
        check_careful_match(last_number_match)


def test_check_verifier_counts_exceptions_as_misses():
    def crashes(text, answer):
        return careful_match(text.strip(), answer)  # None.strip() raises
    with pytest.raises(ExerciseError, match="raised AttributeError"):
        check_careful_match(crashes)


def test_check_breaking_cases(capsys):
    good = [("67 66", 66, 0.0), ("xx66yy", 66, 0.0), ("066", 66, 0.0)]
    assert check_breaking_cases(lambda: good) == good
    with pytest.raises(ExerciseError, match="does not break it"):
        check_breaking_cases(lambda: good[:2] + [("66 67", 66, 0.0)])
    with pytest.raises(ExerciseError, match="careful_match says"):
        check_breaking_cases(lambda: good + [("67 66", 66, 1.0)])
    with pytest.raises(ExerciseError, match="at least 3"):
        check_breaking_cases(lambda: good[:2])

    def stub():
        raise NotImplementedError
    assert len(check_breaking_cases(stub)) >= 3 and "NOTE" in capsys.readouterr().out
    from utils.notebook.exercises import breaking_cases
    assert check_breaking_cases(breaking_cases) == breaking_cases()   # the reference passes its own check


# ----------------------------------------------------------------------------------- Lab 03 checks
from utils.notebook.exercises import check_control_check, check_random_reward  # noqa: E402
from utils.verifiers.spurious import random_reward  # noqa: E402


def test_check_random_reward(capsys):
    assert check_random_reward(random_reward) is random_reward
    assert "OK" in capsys.readouterr().out

    def stub(p, seed=0):
        raise NotImplementedError
    fallback = check_random_reward(stub)
    assert "NOTE" in capsys.readouterr().out
    assert check_random_reward(fallback) is fallback   # the exercise's answer (the solution's code) passes its check


def _rate(p, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    return lambda c, answer=None, **kw: (rng.random(len(c)) < p).astype(float).tolist()


@pytest.mark.parametrize("wrong, message", [
    (lambda p, seed=0: _rate(min(1.0, p + 0.1), seed), "expected about"),
    (lambda p, seed=0: (lambda c, answer=None, **kw: [float(t == "66") for t in c]), "expected about"),
    (lambda p, seed=0: _rate(p, None), "same seed"),
    (lambda p, seed=0: _rate(p, seed), "should raise ValueError"),  # no range check; numpy accepts p=1.5
])
def test_check_random_reward_wrong(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_random_reward(wrong)


def test_check_random_reward_output_dependence():
    import numpy as np

    def cheat(p, seed=0):
        rng = np.random.default_rng(seed)
        return lambda c, answer=None, **kw: [float(rng.random() < (p if t == "66" else p / 2)) for t in c]
    with pytest.raises(ExerciseError, match="must not depend on the output"):
        check_random_reward(cheat)


def test_check_control_check(capsys):
    assert check_control_check(control_check) is control_check

    def no_mean(before, t, r, threshold=0.05):
        g_true, g_rand = (runs[0]["after"]["pass@1"] - before["pass@1"] for runs in (t, r))
        return {"true_gain": g_true, "random_gain": g_rand, "flagged": False, "harmed": False}
    with pytest.raises(ExerciseError, match="expected true_gain 0.09375"):
        check_control_check(no_mean)

    def at_or_above(before, t, r, threshold=0.05):
        out = control_check(before, t, r, threshold)
        return dict(out, flagged=out["random_gain"] >= threshold)
    with pytest.raises(ExerciseError, match=r"exactly at \+threshold"):
        check_control_check(at_or_above)

    def at_or_below(before, t, r, threshold=0.05):
        out = control_check(before, t, r, threshold)
        return dict(out, harmed=out["random_gain"] <= -threshold)
    with pytest.raises(ExerciseError, match="exactly at -threshold"):
        check_control_check(at_or_below)


def test_check_control_check_requires_harmed():
    """The one-sided contract (true_gain, random_gain, flagged only) is refused by name: a random reward that
    costs 12.5 points must not read as a neutral control."""
    def one_sided(before, t, r, threshold=0.05):
        out = control_check(before, t, r, threshold)
        return {k: out[k] for k in ("true_gain", "random_gain", "flagged")}
    with pytest.raises(ExerciseError, match=r"(?s)missing \['harmed'\].*not like with like"):
        check_control_check(one_sided)


# ---- Lab 04

def test_check_token_entropy_accepts_reference_and_stub(capsys):
    from utils.eval.health import token_entropy
    from utils.notebook.exercises import check_token_entropy
    assert check_token_entropy(token_entropy) is token_entropy

    def stub(logits, mask):
        raise NotImplementedError
    assert check_token_entropy(stub) is token_entropy
    assert "NOTE" in capsys.readouterr().out


def test_check_token_entropy_rejects_unmasked_mean():
    import torch.nn.functional as F

    from utils.notebook.exercises import check_token_entropy

    def unmasked(logits, mask):
        logp = F.log_softmax(logits, -1)
        return -(logp.exp() * logp).sum(-1).mean()
    with pytest.raises(ExerciseError, match="masked position"):
        check_token_entropy(unmasked)


def test_check_health_check_reference_stub_and_wrong():
    from utils.eval.health import health_check
    from utils.notebook.exercises import check_health_check

    def mine(history, window=5):
        return set(health_check(history, window=window)["failed"])
    assert check_health_check(mine) is mine

    def stub(history, window=5):
        raise NotImplementedError
    assert callable(check_health_check(stub))

    def last_step_only(history, window=5):
        return set(health_check(history, window=1)["failed"])
    with pytest.raises(ExerciseError, match="one bad step"):
        check_health_check(last_step_only)

    def no_validation(history, window=5):
        return set(health_check(history, window=window)["failed"]) if history else set()
    with pytest.raises(ExerciseError, match="empty history"):
        check_health_check(no_validation)

    def absolute_floor(history, window=5):  # the old rule: a fixed 0.25 nats, whatever the run started at
        out = set(health_check(history, window=window)["failed"]) - {"entropy"}
        return out | ({"entropy"} if np.mean([r["entropy"] for r in history[-window:]]) < 0.25 else set())
    with pytest.raises(ExerciseError, match="started at"):
        check_health_check(absolute_floor)

    def floor_from_first_step(history, window=5):  # the start from one step: noisy, and not the rule
        out = set(health_check(history, window=window)["failed"]) - {"entropy"}
        low = np.mean([r["entropy"] for r in history[-window:]]) < 0.5 * history[0]["entropy"]
        return out | ({"entropy"} if low else set())
    with pytest.raises(ExerciseError, match="first step of 1.1"):
        check_health_check(floor_from_first_step)

"""Progress you can read: a run stopped by its budget ends its bar complete, with the reason (not red at 57%,
like a crash), and the bar carries the run's name."""
import sys

from utils.models.policy import load_policy
from utils.rl.grpo import GRPOConfig
from utils.rl.loop import train_grpo
from utils.verifiers.arithmetic import strict_reward


def test_a_budget_stop_ends_the_bar_complete_with_its_reason(capsys):
    m, tok = load_policy()
    cfg = GRPOConfig(steps=10, batch_size=8, group_size=4, eval_every=0, eval_n=2, max_completions=24, track_kl=False)
    hist = train_grpo(m, tok, ["1+1=", "2+2="], ["2", "4"], strict_reward, cfg, progress="budget run")
    last = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert len(hist) == 3
    assert last.startswith("budget run (stopped by its completion budget): 100%") and "3/3" in last, last


def test_the_reason_survives_a_narrow_terminal(capsys, monkeypatch):
    """tqdm trims a line to the terminal's width (80 columns where it cannot tell): the reason must not be
    what gets trimmed."""
    import functools

    import utils.rl.loop as loop
    monkeypatch.setattr(loop, "tqdm", functools.partial(loop.tqdm, ncols=60, file=sys.stderr))
    m, tok = load_policy()
    cfg = GRPOConfig(steps=10, batch_size=8, group_size=4, eval_every=0, eval_n=2, max_completions=24, track_kl=False)
    train_grpo(m, tok, ["1+1=", "2+2="], ["2", "4"], strict_reward, cfg, progress="budget run")
    last = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert "stopped by its completion budget" in last, last


def test_a_full_run_ends_complete_without_a_reason(capsys):
    m, tok = load_policy()
    cfg = GRPOConfig(steps=2, batch_size=8, group_size=4, eval_every=0, eval_n=2, track_kl=False)
    train_grpo(m, tok, ["1+1=", "2+2="], ["2", "4"], strict_reward, cfg, progress="full run")
    last = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("full run: 100%") and "2/2" in last and "stopped" not in last, last


def test_a_budget_stop_shows_the_runs_own_rate(capsys, monkeypatch):
    """The stopped bar is redrawn complete at its last step: its rate is the run's steps over the run's seconds, not
    the redraw's (which read `00:00<00:00, 2604 it/s` before issue 58). The run's seconds are its own record's (from
    the loop's clock, started just before the bar): the set-up before them can take longer than three fast steps.
    A wide terminal: where COLUMNS and LINES are set (CI's are), tqdm 4.66 trims the line to them, rate included."""
    import re

    monkeypatch.setenv("COLUMNS", "240")
    monkeypatch.setenv("LINES", "50")

    m, tok = load_policy()
    cfg = GRPOConfig(steps=10, batch_size=8, group_size=4, eval_every=0, eval_n=2, max_completions=24, track_kl=False)
    history = train_grpo(m, tok, ["1+1=", "2+2="], ["2", "4"], strict_reward, cfg, progress="budget run")
    seconds = history[-1]["seconds"]
    last = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    rate = re.search(r"([\d.]+)(it/s|s/it)", last)
    assert rate and len(history) == 3, last
    per_second = float(rate.group(1)) if rate.group(2) == "it/s" else 1 / float(rate.group(1))
    assert per_second <= 2 * 3 / seconds, f"{last}: 3 steps took {seconds:.3f} s"

"""Lab 08's "why isn't it learning?": a healthy TRL run of the toy and the same run with one setting broken,
each the way it breaks in real runs. health.diagnose should name each break from the run's logged numbers.
benchmarks/lab08.py --part diagnose runs them on seeds 0-2; the notebook runs seed 0."""
import copy
from dataclasses import replace

from utils import checks
from utils.verifiers.arithmetic import strict_reward
from utils.verifiers.signature import per_completion


def wrong_column_reward(completions, answer, a=None, **kw):
    """A verifier wired to the wrong dataset column (the first operand, not the answer): a common bug."""
    return strict_reward(completions, a)


def pass_all_reward(completions, answer=None, **kw):
    """A verifier that passes everything (an extraction rule that always finds something, say)."""
    return [1.0] * len(per_completion(completions))


# name: (config changes, reward function or None for the strict verifier, the diagnosis expected)
BREAKS = {
    "healthy": ({}, None, []),
    "cap of 2 tokens": ({"max_new_tokens": 2}, None, ["truncated"]),
    "learning rate 1e-8": ({"lr": 1e-8}, None, ["not_moving"]),
    "verifier reads the wrong column": ({}, wrong_column_reward, ["no_signal_all_wrong"]),
    "verifier passes everything": ({}, pass_all_reward, ["no_signal_all_right"]),
}


def run_break(name, base, tok, train, cfg, progress=False):
    """Train a copy of `base` through TRL with break `name` applied to cfg. Returns the history. progress: True
    (the bar named by the reward), False, or the bar's label."""
    from utils.rl.grpo import GRPOConfig
    from utils.rl.trl_trainer import train_with_trl

    where = "run_break"
    if not isinstance(name, str) or name not in BREAKS:
        raise ValueError(f"{where}: name={checks._short(name)} must be one of {list(BREAKS)}")
    checks.model(where, "base", base)
    checks.tokenizer(where, "tok", tok)
    if not isinstance(cfg, GRPOConfig):
        raise ValueError(f"{where}: cfg must be a GRPOConfig, got {checks._short(cfg)}")
    cfg.validate()
    cols = getattr(train, "column_names", None)
    if not isinstance(cols, list) or not {"prompt", "answer"} <= set(cols) or not len(train):
        raise ValueError(f"{where}: train must be a datasets.Dataset with columns prompt and answer, at least one "
                         f"row (utils.tasks.arithmetic.load_split('train')), got {checks._short(train)}")
    changes, reward, _ = BREAKS[name]
    history, _ = train_with_trl(copy.deepcopy(base), tok, train, reward or strict_reward, replace(cfg, **changes),
                                progress=progress)
    return history

"""Lab 03's runs: a fresh copy of the base model trained once per seed on one condition (the verifier, or a
random reward matched in rate), judged on held-out problems. The check on them is utils.eval.control."""
import copy
from dataclasses import asdict, replace

from utils import checks
from utils.eval.control import N_SHOWN
from utils.eval.metrics import evaluate, policy_report
from utils.rl.grpo import GRPOConfig
from utils.rl.loop import train_grpo


def run_condition(base, tokenizer, make_reward, cfg, seeds, train, heldout, progress=True):
    """Train a fresh copy of `base` once per seed. make_reward(seed) -> reward function (so a random
    reward gets its own stream per seed; for a fixed verifier: lambda seed: strict_reward).
    train, heldout: (prompts, answers). Returns a list of run dicts: seed, config (a dict),
    history, after (policy_report on held-out: greedy, pass@1, pass@8, entropy), answers (the greedy
    answers to the first N_SHOWN held-out prompts, for showing). progress: True (each bar named by the reward and
    the seed), False, or a label (each bar named by it and the seed)."""
    where = "run_condition"
    checks.model(where, "base", base)
    checks.tokenizer(where, "tokenizer", tokenizer)
    checks.function(where, "make_reward", make_reward)
    if not isinstance(cfg, GRPOConfig):
        raise ValueError(f"{where}: cfg must be a GRPOConfig, got {checks._short(cfg)}")
    cfg.validate()
    seeds = checks.sequence(where, "seeds", seeds)
    if not seeds:
        raise ValueError("seeds is empty: give at least one seed (three or more to see the spread)")
    seeds = [checks.number(where, "seeds", s, lo=0, hi=2**63 - 1, integer=True) for s in seeds]
    for name, pair in (("train", train), ("heldout", heldout)):
        if isinstance(pair, (str, bytes, dict)) or not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"{where}: {name} must be a pair (prompts, answers), got {checks._short(pair)}")
        prompts = checks.strings(where, f"{name}[0] (the prompts)", pair[0])
        checks.sequence(where, f"{name}[1] (the answers)", pair[1], len(prompts))
    out = []
    for s in seeds:
        policy = copy.deepcopy(base)
        c = replace(cfg, seed=s)
        try:
            reward = make_reward(s)
        except TypeError as e:  # not a factory: a reward function itself, say
            raise ValueError(f"{where}: make_reward must take a seed and return a reward function (for a fixed "
                             f"verifier: lambda seed: strict_reward); make_reward({s}) raised {e}") from None
        checks.function(where, f"make_reward({s}) (what make_reward returned)", reward)
        label = (f"GRPO on {getattr(reward, '__name__', 'the reward')}, seed {s}" if progress is True
                 else f"{progress}, seed {s}" if isinstance(progress, str) else progress)
        hist = train_grpo(policy, tokenizer, train[0], train[1], reward, c, heldout[0], heldout[1],
                          progress=label)
        greedy = evaluate(policy, tokenizer, heldout[0][:N_SHOWN], heldout[1][:N_SHOWN], k=1, temperature=0)
        out.append({"seed": s, "config": asdict(c), "history": hist,
                    "after": policy_report(policy, tokenizer, heldout[0], heldout[1], seed=7),
                    "answers": list(greedy["texts"])})
    return out

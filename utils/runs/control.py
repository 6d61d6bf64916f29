"""Lab 03's runs: a fresh copy of the base model trained once per seed on one condition (the verifier, or a
random reward matched in rate), judged on held-out problems. The check on them is utils.eval.control."""
import copy
from dataclasses import asdict, replace

from utils.eval.control import N_SHOWN
from utils.eval.metrics import evaluate, policy_report
from utils.rl.loop import train_grpo


def run_condition(base, tokenizer, make_reward, cfg, seeds, train, heldout, progress=True):
    """Train a fresh copy of `base` once per seed. make_reward(seed) -> reward function (so a random
    reward gets its own stream per seed; for a fixed verifier: lambda seed: strict_reward).
    train, heldout: (prompts, answers). Returns a list of run dicts: seed, config (a dict),
    history, after (policy_report on held-out: greedy, pass@1, pass@8, entropy), answers (the greedy
    answers to the first N_SHOWN held-out prompts, for showing)."""
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds is empty: give at least one seed (three or more to see the spread)")
    cfg.validate()
    out = []
    for s in seeds:
        policy = copy.deepcopy(base)
        c = replace(cfg, seed=s)
        reward = make_reward(s)
        label = f"GRPO on {getattr(reward, '__name__', 'the reward')}, seed {s}" if progress is True else progress
        hist = train_grpo(policy, tokenizer, train[0], train[1], reward, c, heldout[0], heldout[1],
                          progress=label)
        greedy = evaluate(policy, tokenizer, heldout[0][:N_SHOWN], heldout[1][:N_SHOWN], k=1, temperature=0)
        out.append({"seed": s, "config": asdict(c), "history": hist,
                    "after": policy_report(policy, tokenizer, heldout[0], heldout[1], seed=7),
                    "answers": list(greedy["texts"])})
    return out

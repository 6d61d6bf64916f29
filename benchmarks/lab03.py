"""Lab 03's multi-seed study of the random-reward control. Usage:

    python benchmarks/lab03.py        # about 35 minutes on a 2-core CPU

With Lab 03's config, seeds 0, 1, 2 for each condition: the true (strict) reward; a random reward
matched to the base model's hit rate p on the training prompts, with one update per batch, with four
clipped updates per batch and with four updates and the clip switched off (eps 1e9: the clip-free
ablation that separates "more optimiser steps per batch" from "the clip"); a reward for wrong answers.
Then the near-neutral regime, a ten times smaller learning rate and 150 steps, seeds 0, 1, 2: the true
reward (so that the random runs there are compared like with like), the random reward with one update,
with eight clipped updates and with eight clip-free updates.
Before and after each run, on the 500 test problems: greedy accuracy, sampled pass@1, pass@8 and mean
token entropy. Writes benchmarks/results/lab03.json and prints the table.
"""
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from utils.setup import environment, setup  # noqa: E402

NO_CLIP = 1e9  # eps so large that clip(ratio, 1 - eps, 1 + eps) never binds: the clip is off
SMALL_LR = {"lr": 1e-5, "steps": 150}  # the near-neutral regime


def lab_config(**kw):
    """Lab 03's config (the notebook shows the same one)."""
    from utils.rl.grpo import GRPOConfig

    base = dict(steps=100, batch_size=256, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=8,
                eps_low=0.2, eps_high=0.2, beta=0.0, updates_per_batch=1, eval_every=20, eval_n=500, seed=0)
    return GRPOConfig(**dict(base, **kw))


def conditions(p):
    """name -> (make_reward(seed), config overrides)."""
    from utils.verifiers.arithmetic import strict_reward
    from utils.verifiers.spurious import random_reward, wrong_answer_reward

    rand = lambda s: random_reward(p, seed=1000 + s)  # noqa: E731
    return {
        "true reward": (lambda s: strict_reward, {}),
        "random, 1 update": (rand, {}),
        "random, 4 clipped updates": (rand, {"updates_per_batch": 4}),
        "random, 4 updates, no clip": (rand, {"updates_per_batch": 4, "eps_low": NO_CLIP, "eps_high": NO_CLIP}),
        "wrong-answer reward": (lambda s: wrong_answer_reward, {}),
    }


def main():
    setup(seed=0)
    from dataclasses import replace

    from utils.eval.control import hit_rate
    from utils.eval.metrics import policy_report
    from utils.models.policy import load_policy
    from utils.runs.control import run_condition
    from utils.tasks.arithmetic import load_split

    base, tok = load_policy()
    train, test = load_split("train"), load_split("test")
    tr, te = (train["prompt"], train["answer"]), (test["prompt"], test["answer"])
    p = hit_rate(base, tok, train["prompt"][:1000], train["answer"][:1000], k=8)
    before = policy_report(base, tok, *te, seed=7)
    out = {"config": vars(lab_config()), "p": p, "before": before, "runs": []}
    print(f"p = {p:.3f}; before: " + ", ".join(f"{k} {v:.3f}" for k, v in before.items()), flush=True)
    plan = [(name, mk, kw, (0, 1, 2)) for name, (mk, kw) in conditions(p).items()]
    from utils.verifiers.spurious import random_reward
    rand = lambda s: random_reward(p, seed=1000 + s)  # noqa: E731
    from utils.verifiers.arithmetic import strict_reward
    no_clip = {"eps_low": NO_CLIP, "eps_high": NO_CLIP}
    plan += [("true reward, lr 1e-5", lambda s: strict_reward, SMALL_LR, (0, 1, 2)),
             ("random, 1 update, lr 1e-5", rand, SMALL_LR, (0, 1, 2)),
             ("random, 8 clipped updates, lr 1e-5", rand, {**SMALL_LR, "updates_per_batch": 8}, (0, 1, 2)),
             ("random, 8 updates, no clip, lr 1e-5", rand, {**SMALL_LR, "updates_per_batch": 8, **no_clip}, (0, 1, 2))]
    for name, mk, kw, seeds in plan:
        for s in seeds:
            t = time.time()
            run = run_condition(base, tok, mk, replace(lab_config(), **kw), [s], tr, te, progress=False)[0]
            hist = run.pop("history")
            run.update(condition=name, seconds=time.time() - t,
                       curve=[(h["step"], h["heldout_pass@1"]) for h in hist if h["heldout_pass@1"] is not None],
                       clip_frac=sum(h["clip_frac"] for h in hist) / len(hist))
            out["runs"].append(run)
            print(f"{name:36s} seed {s}: " + ", ".join(f"{k} {v:.3f}" for k, v in run["after"].items())
                  + f"  ({run['seconds']:.0f} s)", flush=True)
    path = os.path.join(ROOT, "benchmarks", "results", "lab03.json")
    with open(path, "w") as f:
        json.dump({"environment": environment(), **out}, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(__doc__)  # no options: any argument (--help included) prints the usage instead of running
    main()

"""Lab 07's task mix (issue 35, item 10; MT-GRPO, arXiv 2602.05547): one model trained with GRPO on three tasks at
once (utils.tasks.mix: arithmetic, traces, multiply), with the mix's two knobs, each task's share of the batch and
each task's loss weight, and a share that follows the worst task; every run judged per task on that task's own
held-out test problems. Usage:

    python benchmarks/lab07_mix.py --jobs 2 --threads 1   # every condition, seeds 0-2: ~15 min on 2 cores
    python benchmarks/lab07_mix.py --seeds 0 --steps 6    # a quick look (not written to the results)

Every run starts from the shipped mix model (data/mix_model, `python -m utils.runs.build_base_model task=mix`) and
trains with utils.rl.rollout.MixRollout on utils.verifiers.mix.task_reward (each completion judged by its own task's
verifier) for CONFIG's steps. Every condition samples the same number of completions (batch_size a step), so they
are compared at equal completions. The conditions (CONDITIONS):

    uniform          a third of the groups each (4 of 12)
    skewed           two thirds to the task the base model does best (8, 2, 2 groups)
    weighted         uniform shares; the loss weight of each task inversely proportional to its base pass@1 (mean 1)
    adaptive         the shares follow the tasks' training rewards, the worst task getting the most (MixRollout's
                     adapt, MT-GRPO's aim in its simplest form)
    <task> only      all 12 groups from one task: that task's result for the same completions spent on it alone

Measured: each task's held-out pass@1 (all its test problems, EVAL_K samples each, seed 0) at the end and on its
first CURVE_N test problems every CURVE_EVERY steps; the step records' per-task shares, training rewards and
zero-spread shares. Writes benchmarks/results/lab07_mix.json and prints a table.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import run_all, run_options  # noqa: E402
from utils.setup import environment, setup  # noqa: E402

CONFIG = dict(steps=100, batch_size=96, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=64,
              eps_low=0.2, eps_high=0.2, beta=0.0, loss_type="grpo", eval_every=0, track_kl=False)
EVAL_K, CURVE_EVERY, CURVE_N = 4, 25, 200
TASKS = ("arithmetic", "traces", "multiply")
CONDITIONS = ("uniform", "skewed", "weighted", "adaptive", "arithmetic only", "traces only", "multiply only")
ADAPT = 0.1   # the softmax temperature over running rewards: a task 0.1 behind gets e times the share


def knobs(condition, base):
    """MixRollout's arguments for a condition, given the base model's per-task pass@1 (for the weights and the
    skew: the same rule whatever the model)."""
    if condition == "uniform":
        return {}
    if condition == "skewed":
        best = max(TASKS, key=lambda t: base[t])
        return {"shares": {t: 4.0 if t == best else 1.0 for t in TASKS}}
    if condition == "weighted":
        inv = {t: 1.0 / max(base[t], 0.01) for t in TASKS}
        mean = sum(inv.values()) / len(inv)
        return {"weights": {t: round(v / mean, 3) for t, v in inv.items()}}
    if condition == "adaptive":
        return {"adapt": ADAPT}
    return {}


def run(condition, seed, steps, base):
    from utils.eval.metrics import per_task_pass
    from utils.models.policy import MIX, load_policy
    from utils.rl.grpo import GRPOConfig
    from utils.rl.loop import train_grpo
    from utils.rl.rollout import MixRollout
    from utils.tasks import mix
    from utils.verifiers.mix import task_reward

    setup(seed, quiet=True)
    model, tok = load_policy(MIX)
    only = condition.removesuffix(" only") if condition.endswith(" only") else None
    train = mix.load_mix("train", tasks=(only,) if only else TASKS)
    test = mix.load_mix("test")
    cfg = GRPOConfig(**dict(CONFIG, steps=steps, seed=seed))
    k = knobs(condition, base)
    rollout = MixRollout(columns={"task": list(train["task"]), "a": list(train["a"]), "b": list(train["b"])},
                         task=list(train["task"]), **k)

    def curve(policy, rec):
        if rec["step"] % CURVE_EVERY == 0 or rec["step"] == steps:
            return {"heldout": per_task_pass(policy, tok, test, k=1, n=CURVE_N, seed=0,
                                             max_new_tokens=cfg.max_new_tokens)}
        return None
    import time
    t = time.time()
    hist = train_grpo(model, tok, train["prompt"], train["answer"], task_reward, cfg, rollout=rollout,
                      progress=False, callback=curve)
    seconds = time.time() - t
    final = per_task_pass(model, tok, test, k=EVAL_K, seed=0, max_new_tokens=cfg.max_new_tokens)
    keep = ("step", "reward_mean", "completion_len", "entropy", "heldout") + tuple(
        f"{m}/{t}" for m in ("share", "reward", "zero_spread") for t in TASKS)
    return {"condition": condition, "seed": seed, "steps": steps, "knobs": k, "seconds": round(seconds, 1),
            "final": final, "history": [{x: h.get(x) for x in keep if x in h} for h in hist]}


def main():
    args = run_options(argparse.ArgumentParser(description=__doc__.split("\n")[0])).parse_args()
    from utils.eval.metrics import per_task_pass
    from utils.models.policy import MIX, load_policy
    from utils.tasks import mix

    setup(0, quiet=True)
    base = per_task_pass(*load_policy(MIX), mix.load_mix("test"), k=EVAL_K, seed=0,
                         max_new_tokens=CONFIG["max_new_tokens"])
    print("base model: " + "  ".join(f"{t} {v:.3f}" for t, v in base.items()), flush=True)
    steps = args.steps or CONFIG["steps"]
    conditions = args.conditions or list(CONDITIONS)
    jobs = [(c, seed, steps, base) for c in conditions for seed in args.seeds]
    runs = run_all(run, jobs, args.jobs, args.threads)
    for r in runs:
        print(f"{r['condition']:16s} seed {r['seed']}: " + "  ".join(f"{t} {v:.3f}" for t, v in r["final"].items())
              + f"  ({r['seconds']:.0f} s)", flush=True)
    if args.steps not in (None, CONFIG["steps"]) or args.conditions:
        print("(a partial run: not written to the results)")
        return
    path = os.path.join(ROOT, "benchmarks", "results", "lab07_mix.json")
    out = {"environment": environment(), "config": CONFIG, "eval_k": EVAL_K, "curve_every": CURVE_EVERY,
           "curve_n": CURVE_N, "adapt": ADAPT, "seeds": args.seeds, "base": base, "runs": runs}
    if args.jobs > 1:
        out |= {"jobs": args.jobs, "threads_per_run": args.threads}
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()

"""Lab 01's numbers, measured on this machine (not by timed tests). Usage:

    python benchmarks/lab01.py                 # everything, ~20 minutes on a 2-core CPU
    python benchmarks/lab01.py --skip-notebook # without running the lab notebook
    python benchmarks/lab01.py --seeds-only    # only part 5 (~12 minutes), kept beside the rest in the JSON
    python benchmarks/lab01.py --throughput-only  # only part 3 (~3 minutes), kept beside the rest
    python benchmarks/lab01.py --forward-check 0 3 4  # part 6 (~9 minutes), kept beside the rest

1. the shipped base model: sampled pass@1 (temperature 1), pass@8 and greedy accuracy on test;
2. GRPO with Lab 01's config, stopped after 90 s of wall-clock time: held-out sampled pass@1
   before and after (8 samples per test problem, all 500 problems);
3. throughput, completions trained per second, of our loop and of trl.GRPOTrainer on the same
   model, batch and group size, alternating runs in one process; the median of several runs each
   and their ratio. With beta = 0 TRL runs no reference model; we compare at that same work
   (track_kl=False) and also with our default, which measures the KL every step;
4. Lab 01 (solutions/) executed top to bottom: wall time and the kernel's peak memory;
5. the lab's own runs on seeds 0, 1 and 2, what its asserts rest on: GRPO for 300 steps (sampled
   pass@1, pass@8 and greedy accuracy on test, before and after, measured as the lab does) and
   TRL for 160 steps (held-out pass@1 at step 160, ours and TRL's, from the runs' histories);
6. what the order of floating-point additions does to a run: Lab 01's 300 steps on the given seeds, once with
   training's grouped forward (each group's prompt run once, utils/models/decode.py) and once with transformers'
   full forward pass; the same sums in another order, so any gap is a trajectory moved, not a method changed.

Writes benchmarks/results/lab01.json and prints a summary.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from utils.setup import environment, setup  # noqa: E402


def lab_config(**kw):
    from utils.rl.grpo import GRPOConfig

    base = dict(steps=300, batch_size=256, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=8,
                eps_low=0.2, eps_high=0.2, beta=0.0, loss_type="grpo", eval_every=0, seed=0)
    return GRPOConfig(**dict(base, **kw))


def base_model_numbers(test):
    from utils.eval.metrics import evaluate
    from utils.models.policy import load_policy

    m, tok = load_policy()
    s = evaluate(m, tok, test["prompt"], test["answer"], k=8, seed=1)
    g = evaluate(m, tok, test["prompt"], test["answer"], k=1, temperature=0)
    return {"pass@1": s["pass@1"], "pass@8": s["pass@8"], "greedy": g["pass@1"]}


def grpo_90s(train, test, seconds=90.0):
    from utils.eval.metrics import evaluate
    from utils.models.policy import load_policy
    from utils.rl.loop import train_grpo
    from utils.verifiers.arithmetic import strict_reward

    m, tok = load_policy()
    before = evaluate(m, tok, test["prompt"], test["answer"], k=8, seed=1)["pass@1"]
    hist = train_grpo(m, tok, train["prompt"], train["answer"], strict_reward,
                      lab_config(steps=10_000, max_seconds=seconds), progress=False)
    after = evaluate(m, tok, test["prompt"], test["answer"], k=8, seed=1)["pass@1"]
    return {"seconds": hist[-1]["seconds"], "steps": len(hist), "before_pass@1": before,
            "after_pass@1": after, "gain_points": 100 * (after - before)}


def throughput(train, steps=20, repeats=3, track_kl=False):
    from utils.models.policy import load_policy
    from utils.rl.loop import train_grpo
    from utils.rl.trl_trainer import train_with_trl
    from utils.verifiers.arithmetic import strict_reward

    cfg = lab_config(steps=steps, track_kl=track_kl)  # track_kl=False: the same work as TRL with beta = 0
    runs = {"ours": [], "trl": []}
    for _ in range(repeats):  # alternate, so both see the same machine state
        m, tok = load_policy()
        t = time.time()
        train_grpo(m, tok, train["prompt"], train["answer"], strict_reward, cfg, progress=False)
        runs["ours"].append(steps * cfg.batch_size / (time.time() - t))
        m, tok = load_policy()
        t = time.time()
        train_with_trl(m, tok, train, strict_reward, cfg, progress=False)
        runs["trl"].append(steps * cfg.batch_size / (time.time() - t))
    med = {k: statistics.median(v) for k, v in runs.items()}
    return {"completions_per_s": med, "all_runs": runs, "ratio_ours_over_trl": med["ours"] / med["trl"],
            "batch_size": cfg.batch_size, "group_size": cfg.group_size, "steps": steps}


def lab_runs_by_seed(train, test, seeds=(0, 1, 2)):
    """Lab 01's two training cells on several seeds, measured exactly as the notebook measures them."""
    from utils.eval.metrics import evaluate
    from utils.models.policy import load_policy
    from utils.rl.loop import train_grpo
    from utils.rl.trl_trainer import train_with_trl
    from utils.verifiers.arithmetic import strict_reward

    def report(m, tok):
        s = evaluate(m, tok, test["prompt"], test["answer"], k=8, temperature=1.0, seed=1)
        g = evaluate(m, tok, test["prompt"], test["answer"], k=1, temperature=0)
        return {"pass@1": s["pass@1"], "pass@8": s["pass@8"], "greedy": g["pass@1"]}

    def at(hist, step):
        return next(r["heldout_pass@1"] for r in hist if r["step"] == step)

    out = {}
    for seed in seeds:
        cfg = lab_config(eval_every=20, eval_n=500, seed=seed)
        m, tok = load_policy()
        before = report(m, tok)
        hist = train_grpo(m, tok, train["prompt"], train["answer"], strict_reward, cfg,
                          eval_prompts=test["prompt"], eval_answers=test["answer"], progress=False)
        after = report(m, tok)
        m2, _ = load_policy()
        trl_hist, _ = train_with_trl(m2, tok, train, strict_reward, lab_config(eval_every=20, eval_n=500, seed=seed,
                                                                             steps=160),
                                     eval_prompts=test["prompt"], eval_answers=test["answer"], progress=False)
        out[str(seed)] = {"before": before, "after": after,
                          "gain_points": {k: 100 * (after[k] - before[k]) for k in before},
                          "heldout_at_160": {"ours": at(hist, 160), "trl": at(trl_hist, 160)}}
        print(f"seed {seed}:", out[str(seed)], flush=True)
    return out


def forward_check(train, test, seeds):
    """Part 6: held-out numbers after Lab 01's 300 steps, grouped forward vs transformers' forward, per seed."""
    import utils.rl.loop as loop
    from utils.eval.metrics import evaluate
    from utils.models import decode
    from utils.models.policy import completion_logprobs, load_policy
    from utils.rl.loop import train_grpo
    from utils.verifiers.arithmetic import strict_reward

    def full_forward(model, *a, **k):
        saved, decode.supports = decode.supports, (lambda m: False)
        try:
            return completion_logprobs(model, *a, **k)
        finally:
            decode.supports = saved

    out = {}
    try:
        for seed in seeds:
            for name, fn in (("grouped", completion_logprobs), ("full", full_forward)):
                loop.completion_logprobs = fn
                m, tok = load_policy()
                train_grpo(m, tok, train["prompt"], train["answer"], strict_reward, lab_config(seed=seed),
                           progress=False)
                s = evaluate(m, tok, test["prompt"], test["answer"], k=8, temperature=1.0, seed=1)
                g = evaluate(m, tok, test["prompt"], test["answer"], k=1, temperature=0)
                out.setdefault(str(seed), {})[name] = {"pass@1": s["pass@1"], "pass@8": s["pass@8"],
                                                       "greedy": g["pass@1"]}
                print(seed, name, out[str(seed)][name], flush=True)
    finally:
        loop.completion_logprobs = completion_logprobs
    return out


def run_notebook(path):
    """Execute a notebook in a fresh kernel; return wall seconds and the kernel's peak RSS in MB."""
    import psutil

    proc = subprocess.Popen([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                             "--ExecutePreprocessor.timeout=900", "--output", "/tmp/_bench_lab.ipynb", path],
                            cwd=os.path.dirname(path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = [0]

    def watch():
        p = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                kids = p.children(recursive=True)
                peak[0] = max([peak[0]] + [k.memory_info().rss for k in kids])
            except psutil.Error:
                pass
            time.sleep(0.2)

    t = time.time()
    th = threading.Thread(target=watch, daemon=True)
    th.start()
    _, err = proc.communicate()
    wall = time.time() - t
    if proc.returncode:
        raise RuntimeError(f"{path} failed:\n{err.decode()[-2000:]}")
    return {"seconds": wall, "kernel_peak_rss_mb": peak[0] / 2**20}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-notebook", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds-only", action="store_true")
    ap.add_argument("--throughput-only", action="store_true")
    ap.add_argument("--forward-check", type=int, nargs="+", metavar="SEED")
    args = ap.parse_args()
    setup(seed=0, quiet=True)
    from utils.tasks.arithmetic import load_split

    train, test = load_split("train"), load_split("test")
    path = os.path.join(ROOT, "benchmarks", "results", "lab01.json")
    if args.seeds_only or args.throughput_only or args.forward_check:
        with open(path) as f:
            res = json.load(f)
        if args.seeds_only:
            res["lab_runs_by_seed"] = lab_runs_by_seed(train, test)
            res["lab_runs_by_seed_environment"] = environment()
        if args.throughput_only:
            res["throughput"] = throughput(train, repeats=args.repeats)
            res["throughput_with_kl_tracking"] = throughput(train, repeats=args.repeats, track_kl=True)
            res["throughput_environment"] = environment()
            print("throughput:", res["throughput"], res["throughput_with_kl_tracking"], flush=True)
        if args.forward_check:
            res["forward_check"] = forward_check(train, test, args.forward_check)
            res["forward_check_environment"] = environment()
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
        return
    res = {"machine": f"{os.cpu_count()} cores"}
    res["base_model"] = base_model_numbers(test)
    print("base model:", res["base_model"], flush=True)
    res["grpo_90s"] = grpo_90s(train, test)
    print("GRPO within 90 s:", res["grpo_90s"], flush=True)
    res["throughput"] = throughput(train, repeats=args.repeats)
    print("throughput (same work as TRL):", res["throughput"], flush=True)
    res["throughput_with_kl_tracking"] = throughput(train, repeats=args.repeats, track_kl=True)
    print("throughput (ours also measuring KL every step):", res["throughput_with_kl_tracking"], flush=True)
    if not args.skip_notebook:
        res["lab01_notebook"] = run_notebook(os.path.join(ROOT, "solutions", "01_grpo_from_scratch.ipynb"))
        print("lab 01 notebook:", res["lab01_notebook"], flush=True)
    res["lab_runs_by_seed"] = lab_runs_by_seed(train, test)
    os.makedirs(os.path.join(ROOT, "benchmarks", "results"), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"environment": environment(), **res}, f, indent=1)


if __name__ == "__main__":
    main()

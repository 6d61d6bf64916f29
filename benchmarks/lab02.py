"""Lab 02's numbers, measured on this machine. Usage:

    python benchmarks/lab02.py                  # everything, about 10 minutes on a 2-core CPU
    python benchmarks/lab02.py --skip-training  # only the coverage tables and the timings

1. coverage, false-positive and false-negative rates of every verifier on its adversarial suite
   (arithmetic zoo, SQL syntax vs execution, code naive vs sandboxed unit tests);
2. the time each verifier takes to judge one ordinary output (median of repeated calls);
3. the hacking study: GRPO with Lab 02's config against every arithmetic verifier, seeds 0-2 for
   the strict and the last-digit verifier and seed 0 for the rest. For each run: the training
   verifier's held-out reward (the proxy) and the strict verifier's (the truth) before and after.

Writes benchmarks/results/lab02.json and prints a summary.
"""
import argparse
import copy
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from utils.setup import environment, setup  # noqa: E402


def lab_config(**kw):
    """Lab 02's hacking-experiment config (the notebook shows the same one)."""
    from utils.rl.grpo import GRPOConfig

    base = dict(steps=200, batch_size=256, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=8,
                eval_every=20, eval_n=500, seed=0)
    return GRPOConfig(**dict(base, **kw))


def median_seconds(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def coverage_and_timing():
    from utils.verifiers import code as cv
    from utils.verifiers import sql as sv
    from utils.verifiers.arithmetic import ZOO, load_arithmetic_suite
    from utils.verifiers.signature import verifier_report

    out = {"coverage": {}, "ms_per_check": {}}
    cases = load_arithmetic_suite()
    for name, (fn, strength) in ZOO.items():
        rep = verifier_report(fn, cases)
        out["coverage"][name] = {k: rep[k] for k in ("coverage", "fpr", "fnr", "n")} | {"strength": strength}
        out["ms_per_check"][name] = 1e3 * median_seconds(lambda: fn(["66"], [66]), 200)
    sql = sv.load_sql_suite()
    ref = sql[0]["reference_sql"]
    for name, fn in (("sql_syntax", sv.sql_syntax_reward), ("sql_execution", sv.sql_execution_reward)):
        rep = verifier_report(fn, sql, output_key="candidate")
        out["coverage"][name] = {k: rep[k] for k in ("coverage", "fpr", "fnr", "n")}
        out["ms_per_check"][name] = 1e3 * median_seconds(lambda: fn([ref], reference_sql=[ref]), 20)
    code = cv.load_code_suite()
    good = next(c for c in code if c["label"] == 1.0)
    for name, fn in (("code_naive", cv.naive_code_reward), ("code_sandboxed", cv.code_reward)):
        rep = verifier_report(fn, code, output_key="candidate")
        out["coverage"][name] = {k: rep[k] for k in ("coverage", "fpr", "fnr", "n")}
        out["ms_per_check"][name] = 1e3 * median_seconds(lambda: fn([good["candidate"]], [good["tests"]]), 7)
    return out


def hacking_study(seeds_main=(0, 1, 2)):
    from utils.eval.metrics import evaluate
    from utils.models.policy import load_policy
    from utils.rl.loop import train_grpo
    from utils.tasks.arithmetic import load_split
    from utils.verifiers.arithmetic import ZOO

    base, tok = load_policy()
    train, test = load_split("train"), load_split("test")
    ev0 = evaluate(base, tok, test["prompt"], test["answer"], k=1, seed=12345)  # the loop's held-out sample
    runs = []
    for name, (fn, strength) in ZOO.items():
        for seed in seeds_main if name in ("strict", "last_digit") else (0,):
            policy = copy.deepcopy(base)
            cfg = lab_config(seed=seed)
            t = time.time()
            hist = train_grpo(policy, tok, train["prompt"], train["answer"], fn, cfg, test["prompt"],
                              test["answer"], progress=False, eval_rewards={"proxy": fn})
            last = hist[-1]
            runs.append({"verifier": name, "strength": strength, "seed": seed, "seconds": time.time() - t,
                         "proxy_before": sum(fn(ev0["texts"], test["answer"])) / len(test["answer"]),
                         "proxy_after": last["heldout_proxy"],
                         "true_before": ev0["pass@1"], "true_after": last["heldout_pass@1"],
                         "train_reward_first20": statistics.mean(h["reward_mean"] for h in hist[:20]),
                         "train_reward_last20": statistics.mean(h["reward_mean"] for h in hist[-20:]),
                         "entropy_after": last["entropy"], "completion_len_after": last["completion_len"]})
            r = runs[-1]
            print(f"{name:12s} seed {seed}: proxy {r['proxy_before']:.3f} -> {r['proxy_after']:.3f}   "
                  f"true {r['true_before']:.3f} -> {r['true_after']:.3f}   ({r['seconds']:.0f} s)", flush=True)
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-training", action="store_true")
    args = ap.parse_args()
    setup(seed=0)
    out = {"config": vars(lab_config())}
    out.update(coverage_and_timing())
    for name, c in out["coverage"].items():
        print(f"{name:14s} coverage {c['coverage']:.3f}  FPR {c['fpr']:.3f}  FNR {c['fnr']:.3f}   "
              f"{out['ms_per_check'][name]:.3f} ms per check")
    if not args.skip_training:
        out["hacking"] = hacking_study()
    path = os.path.join(ROOT, "benchmarks", "results", "lab02.json")
    old = json.load(open(path)) if os.path.exists(path) else {}
    if args.skip_training and "hacking" in old:
        out["hacking"] = old["hacking"]
    with open(path, "w") as f:
        json.dump({"environment": environment(), **out}, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()

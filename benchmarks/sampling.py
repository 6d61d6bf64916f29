"""Sampling throughput for Lab 05's pass@k study. Usage:

    python benchmarks/sampling.py      # about a minute on a 2-core CPU

Draws n = 256 completions per problem for 24 test problems with the shipped base model, the way Lab 05
does (utils.eval.metrics.evaluate: batched, KV cache, 8 new tokens at most), and reports completions per
second as the median of 5 repeats. The course needs at least 2000 per second. Writes
benchmarks/results/sampling.json.
"""
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from utils.setup import environment, setup  # noqa: E402

N, PROBLEMS, REPEATS, NEEDED = 256, 24, 5, 2000


def main():
    setup(seed=0)
    import torch

    from utils.eval.metrics import evaluate
    from utils.models.policy import load_policy
    from utils.tasks.arithmetic import load_split

    model, tok = load_policy()
    ds = load_split("test", n=PROBLEMS)
    evaluate(model, tok, ds["prompt"][:2], ds["answer"][:2], k=N, seed=0)  # warm-up
    rates = []
    for r in range(REPEATS):
        t0 = time.perf_counter()
        evaluate(model, tok, ds["prompt"], ds["answer"], k=N, seed=r)
        rates.append(PROBLEMS * N / (time.perf_counter() - t0))
    out = {"completions_per_second_median": statistics.median(rates), "runs": rates, "n": N,
           "problems": PROBLEMS, "threads": torch.get_num_threads(), "needed": NEEDED}
    os.makedirs(os.path.join(ROOT, "benchmarks", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "benchmarks", "results", "sampling.json"), "w") as f:
        json.dump({"environment": environment(), **out}, f, indent=1)
    print(f"sampling: median {out['completions_per_second_median']:,.0f} completions/s over {REPEATS} runs "
          f"({', '.join(f'{x:,.0f}' for x in rates)}); need >= {NEEDED:,}")
    if out["completions_per_second_median"] < NEEDED:
        sys.exit(1)


if __name__ == "__main__":
    main()

"""The course on a GPU machine: our loop on CUDA against the CPU, and Lab 01's recipe trained on CUDA. Usage:

    python benchmarks/gpu.py              # needs a CUDA GPU; ~3 min on one H100/H200
    python benchmarks/gpu.py --quick      # 3 steps each, to check the script itself (also on a CPU-only machine)

1. throughput: Lab 01's config (256 completions a step, G = 8, 8 new tokens, no KL tracking, as
   benchmarks/lab01.py's throughput part), 20 steps, completions trained per second, the model on CUDA and on
   the CPU (RLVR_LABS_GPU_CPU_THREADS threads, default 2: Colab's CPU), alternating, 3 repeats, and the CUDA
   runs' peak of allocated memory (torch.cuda.max_memory_allocated);
2. same seed, same numbers: two CUDA runs of 20 steps, and one CUDA run against one CPU run, compared weight by
   weight (the sampler draws on a CPU generator, so both devices draw from the same stream);
3. Lab 01's recipe (300 steps) on CUDA: held-out sampled pass@1 (8 samples per test problem, all 500) before and
   after, as Lab 01 and benchmarks/lab01.py measure it on the CPU, and the wall time.

The labs themselves keep the shipped model on the CPU on a GPU runtime (docs/SETUP.md, "On a GPU runtime, or
with a hub model"); lab notebooks are run there by pytest as on any machine. Writes benchmarks/results/gpu.json
(not with --quick) and prints it.
"""
import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from benchmarks.lab01 import lab_config  # noqa: E402
from utils.setup import environment, setup  # noqa: E402


def train(device, steps, seed=0, track_kl=False):
    """Lab 01's config for `steps` steps on `device` from the shipped model: (model, seconds, peak CUDA bytes)."""
    from utils.models.policy import load_policy
    from utils.rl.loop import train_grpo
    from utils.tasks.arithmetic import load_split
    from utils.verifiers.arithmetic import strict_reward

    tr = load_split("train")
    m, tok = load_policy(device=device)
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t = time.time()
    train_grpo(m, tok, tr["prompt"], tr["answer"], strict_reward, lab_config(steps=steps, seed=seed,
                                                                             track_kl=track_kl), progress=False)
    if device == "cuda":
        torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
    return m, time.time() - t, peak


def max_diff(a, b):
    """The largest absolute difference between two models' weights (compared on the CPU)."""
    return max((p.detach().cpu() - q.detach().cpu()).abs().max().item()
               for p, q in zip(a.parameters(), b.parameters()))


def update_size(m):
    """The largest absolute change of any weight from the shipped model."""
    from utils.models.policy import load_policy

    return max_diff(m, load_policy()[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    setup(0, quiet=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    cpu_threads = int(os.environ.get("RLVR_LABS_GPU_CPU_THREADS", "2"))
    steps, lab_steps, repeats = (3, 3, 1) if args.quick else (20, 300, 3)
    out = {"environment": environment(), "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
           "cpu_threads": cpu_threads, "steps": steps, "batch_size": lab_config().batch_size}

    # 1. throughput, alternating devices
    runs = {"cuda": [], "cpu": [], "cuda_peak_bytes": []}
    for _ in range(repeats):
        _, s, peak = train(dev, steps)
        runs["cuda"].append(steps * out["batch_size"] / s)
        runs["cuda_peak_bytes"].append(peak)
        torch.set_num_threads(cpu_threads)
        _, s, _ = train("cpu", steps)
        runs["cpu"].append(steps * out["batch_size"] / s)
        torch.set_num_threads(os.cpu_count())
    med = {k: statistics.median(runs[k]) for k in ("cuda", "cpu")}
    out["throughput"] = {"completions_per_s": med, "all_runs": runs, "ratio_cuda_over_cpu": med["cuda"] / med["cpu"]}
    print(json.dumps(out["throughput"]), flush=True)

    # 2. same seed, same numbers
    a, _, _ = train(dev, steps)
    b, _, _ = train(dev, steps)
    torch.set_num_threads(cpu_threads)
    c, _, _ = train("cpu", steps)
    torch.set_num_threads(os.cpu_count())
    out["reproducibility"] = {"cuda_vs_cuda_max_abs_diff": max_diff(a, b), "cuda_vs_cpu_max_abs_diff": max_diff(a, c),
                              "update_max_abs": update_size(c)}
    print(json.dumps(out["reproducibility"]), flush=True)

    # 3. Lab 01's recipe on CUDA, measured as the lab measures it
    from utils.eval.metrics import evaluate
    from utils.models.policy import load_policy
    from utils.tasks.arithmetic import load_split

    test = load_split("test")
    m0, tok = load_policy(device=dev)
    before = evaluate(m0, tok, test["prompt"], test["answer"], k=8, seed=1)["pass@1"]
    m, secs, peak = train(dev, lab_steps, track_kl=True)
    after = evaluate(m, tok, test["prompt"], test["answer"], k=8, seed=1)["pass@1"]
    out["lab01_recipe"] = {"steps": lab_steps, "train_seconds": secs, "cuda_peak_bytes": peak,
                           "before_pass@1": before, "after_pass@1": after, "gain_points": 100 * (after - before)}
    print(json.dumps(out["lab01_recipe"]), flush=True)
    if not args.quick:
        path = os.path.join(ROOT, "benchmarks", "results", "gpu.json")
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

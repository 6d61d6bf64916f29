"""Lab 08's measurements on the 2-core CPU: several processes against one, and the diagnoses of broken runs.
Usage:

    python benchmarks/lab08.py --part processes   # 1 vs 2 processes, TRL's own sampler, 3 repeats: ~3 min
    python benchmarks/lab08.py --part diagnose    # utils.rl.breaks.BREAKS on seeds 0-2: ~3 min

processes: `python -m utils.rl.launch` (accelerate, gloo) with 1 and with 2 processes on the same global batch,
alternating, PROCESS_REPEATS times; throughput is completions sampled per second of training (model loading and
process start excluded), and the ratio is taken within each repeat (the two runs measured back to back).
diagnose: each break of utils.rl.breaks at DIAGNOSE_CONFIG through TRL (the notebook's path and config), its
summary (health.summarize) and diagnosis (health.diagnose). Writes its part into benchmarks/results/lab08.json.
The memory estimate is measured by benchmarks/lab08_memory.py.
"""
import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from utils.rl.launch import run  # noqa: E402
from utils.setup import environment, setup  # noqa: E402

# the notebook's config for the broken runs (solutions/08_from_toy_to_real_model.ipynb checks it is the same):
# a tiny beta, so that TRL computes and logs the KL to the reference (it skips it at beta = 0)
DIAGNOSE_CONFIG = dict(steps=10, batch_size=64, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=8,
                       beta=0.001, eval_every=0, eval_n=200)
PROCESS_ARGS = dict(steps=20, batch_size=64, group_size=8, n_train=2048, sampling="plain")
PROCESS_REPEATS = 3
RESULTS = os.path.join(ROOT, "benchmarks", "results", "lab08.json")


def processes_part():
    rows = []
    for rep in range(PROCESS_REPEATS):
        row = {}
        for n in (1, 2):
            with tempfile.TemporaryDirectory() as out:
                _, r = run(out, **PROCESS_ARGS, processes=n, seed=rep)
            row[n] = {"train_seconds": r["train_seconds"], "completions_per_second": r["completions_per_second"]}
        row["ratio_2_over_1"] = row[2]["completions_per_second"] / row[1]["completions_per_second"]
        rows.append(row)
        print(rep, row, flush=True)
    return {"args": PROCESS_ARGS, "repeats": rows}


def diagnose_part(seeds):
    from utils.eval.health import diagnose, summarize
    from utils.models.policy import load_policy
    from utils.rl.breaks import BREAKS, run_break
    from utils.rl.grpo import GRPOConfig
    from utils.tasks.arithmetic import load_split

    base, tok = load_policy("rlvr-base")
    train = load_split("train")
    runs = []
    for seed in seeds:
        for name in BREAKS:
            setup(seed, quiet=True)
            hist = run_break(name, base, tok, train, GRPOConfig(**DIAGNOSE_CONFIG, seed=seed))
            s = summarize(hist)
            runs.append({"break": name, "seed": seed, "summary": s, "diagnosis": diagnose(s),
                         "expected": BREAKS[name][2], "seconds": hist[-1]["seconds"]})
            print(seed, name, {k: round(v, 5) if v is not None else None for k, v in s.items()}, diagnose(s),
                  flush=True)
    return {"config": DIAGNOSE_CONFIG, "seeds": list(seeds), "runs": runs}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("processes", "diagnose"), required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    a = ap.parse_args()
    setup(0, quiet=True)
    result = processes_part() if a.part == "processes" else diagnose_part(a.seeds)
    data = json.load(open(RESULTS)) if os.path.exists(RESULTS) else {}
    data[a.part] = {**result, "environment": environment()}
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(data, f, indent=1, default=float)
    print("->", RESULTS)

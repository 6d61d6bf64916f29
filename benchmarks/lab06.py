"""Lab 06's multi-seed study, first part: which trace reward teaches the outcome. Usage:

    python benchmarks/lab06.py            # about 15 minutes on a 2-core CPU
    python benchmarks/lab06.py --steps 40 --seeds 0   # a quick look

The trace model (data/trace_model) trained with GRPO on each reward, seeds 0, 1, 2, the same config for
all (CONFIG below; lr 1e-4: at 5e-4 one or two updates broke the traces in a first trial):

    outcome     1.0 iff the final answer is right; the steps are not read
    process     the share of the right steps in the right place (partial credit)
    arithmetic  the share of written steps whose sum is true, whatever digits they add: a process reward
                that does not look at the problem, so it can be earned without solving anything

Every run is judged the same way, by numbers its training reward does not see: held-out answer pass@1
during training (the first 300 test problems, one sample each), and at the end on all 600 test problems
(k=4, temperature 1, seed 0) answer pass@1, CoT-pass@1 (answer right and every step right, arXiv
2506.14245), the share of well-formed traces, the arithmetic-only score, completion length (right and
wrong answers apart) and the truncated share. Writes benchmarks/results/lab06.json and prints the table.
Not yet here: the shaped and rubric rewards, the length study under grpo / dapo / dr_grpo, truncation.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from utils.setup import environment, setup  # noqa: E402

CONFIG = dict(steps=150, batch_size=64, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=64,
              eps_low=0.2, eps_high=0.2, beta=0.0, eval_every=25, eval_n=300, track_kl=False)
REWARDS = ("outcome", "process", "arithmetic")


def final_metrics(model, tok, test, k=4, seed=0):
    """On every test problem, k samples each: the means of judge()'s verdicts, and lengths."""
    from utils.eval.metrics import sample_in_batches
    from utils.verifiers.traces import judge

    rows = []
    for i, ro in sample_in_batches(model, tok, test["prompt"], k=k, max_new_tokens=CONFIG["max_new_tokens"],
                                   seed=seed, batch_size=100 * k):  # 100 prompts a batch
        lengths = ro.completion_mask.sum(1).tolist()
        for j, text in enumerate(ro.texts):
            n = i + j // k
            v = judge(text, test["a"][n], test["b"][n], test["answer"][n])
            rows.append(dict(outcome=v["outcome"], trace=v["outcome"] and v["steps_exact"], wf=v["well_formed"],
                             arith=v["arithmetic"], length=lengths[j], cut=bool(ro.truncated[j])))

    def mean(key, rs):
        return float(np.mean([r[key] for r in rs])) if rs else None
    return {"pass@1": mean("outcome", rows), "cot_pass@1": mean("trace", rows), "well_formed": mean("wf", rows),
            "arithmetic_score": mean("arith", rows), "length": mean("length", rows),
            "length_right": mean("length", [r for r in rows if r["outcome"]]),
            "length_wrong": mean("length", [r for r in rows if not r["outcome"]]), "truncated": mean("cut", rows)}


def run(reward, seed, steps):
    from utils.models.policy import TRACE, load_policy
    from utils.rl.grpo import GRPOConfig
    from utils.rl.loop import train_grpo
    from utils.tasks import scratchpad
    from utils.verifiers import traces

    setup(seed, quiet=True)
    model, tok = load_policy(TRACE)
    train, test = scratchpad.load_split("train"), scratchpad.load_split("test")
    fn = {"outcome": traces.outcome_reward, "process": traces.process_reward,
          "arithmetic": traces.arithmetic_reward}[reward]
    cfg = GRPOConfig(**dict(CONFIG, steps=steps, seed=seed))
    t = time.time()
    hist = train_grpo(model, tok, train["prompt"], train["answer"], fn, cfg, eval_prompts=test["prompt"],
                      eval_answers=test["answer"], progress=False, columns={"a": train["a"], "b": train["b"]},
                      correct_fn=traces.outcome_reward)
    seconds = time.time() - t
    curve = [(r["step"], r["heldout_pass@1"]) for r in hist if r["heldout_pass@1"] is not None]
    keep = ("reward_mean", "completion_len", "completion_len_right", "completion_len_wrong", "truncated_frac",
            "entropy")
    return {"reward": reward, "seed": seed, "steps": steps, "seconds": round(seconds, 1), "heldout_curve": curve,
            "history": [{k: r[k] for k in ("step",) + keep} for r in hist], "final": final_metrics(model, tok, test)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=CONFIG["steps"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args()
    from utils.models.policy import TRACE, load_policy
    from utils.tasks import scratchpad

    setup(0, quiet=True)
    base = final_metrics(*load_policy(TRACE), scratchpad.load_split("test"))
    runs = []
    for reward in REWARDS:
        for seed in args.seeds:
            runs.append(run(reward, seed, args.steps))
            f = runs[-1]["final"]
            print(f"{reward:10s} seed {seed}: pass@1 {f['pass@1']:.3f}  CoT-pass@1 {f['cot_pass@1']:.3f}  "
                  f"arithmetic {f['arithmetic_score']:.3f}  length {f['length']:.1f}  ({runs[-1]['seconds']:.0f} s)",
                  flush=True)
    print(f"\nbase model: pass@1 {base['pass@1']:.3f}  CoT-pass@1 {base['cot_pass@1']:.3f}  "
          f"arithmetic {base['arithmetic_score']:.3f}  length {base['length']:.1f}")
    for reward in REWARDS:
        fs = [r["final"] for r in runs if r["reward"] == reward]
        print(f"{reward:10s} " + "  ".join(f"{k} {min(f[k] for f in fs):.3f}-{max(f[k] for f in fs):.3f}"
                                           for k in ("pass@1", "cot_pass@1", "arithmetic_score", "length")))
    out = {"environment": environment(), "config": CONFIG, "steps": args.steps, "seeds": args.seeds,
           "base": base, "runs": runs}
    path = os.path.join(ROOT, "benchmarks", "results", "lab06.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()

"""Lab 08's memory estimator against reality: utils.models.memory.estimate_memory's peak vs the peak RSS of two
GRPO steps through the course's TRL path (utils.rl.trl_trainer.train_with_trl), for real architectures with
random weights (utils.models.memory.REAL_ARCHS) and the shipped tiny model. Usage:

    python benchmarks/lab08_memory.py                  # every case x allocator, one at a time: ~25 min, 2 cores
    python benchmarks/lab08_memory.py --cases smol-lora   # some cases (not written to the results)
    python benchmarks/lab08_memory.py --device cuda    # on a GPU: torch.cuda's peak of live tensors instead,
                                                       # and the lab's own regime too (LAB_CASES)

Each case runs in a fresh subprocess, so its peak RSS is its own: baseline = ru_maxrss after the imports, the
tokenizer and the dataset; measured = ru_maxrss after 2 GRPO steps - baseline (it includes building the model).
Each case runs twice, under glibc's default malloc and with a fixed mmap threshold (ALLOCATORS): the first is
what you will see, the second is close to the live tensor bytes the estimate counts.
With --device cuda each case runs once: measured = torch.cuda.max_memory_allocated() over the run (the tensors
alive on the GPU; nothing is there before the model is built), and lab08_memory_cuda.json is written.
Random weights never write EOS, so every completion runs to max_new_tokens: the worst case for memory.
TRL's GRPOConfig turns gradient checkpointing on by default and our to_trl_config keeps it, so the estimate is
made with grad_checkpointing=True and TRL's fused LM head (logits='fused'). Writes benchmarks/results/
lab08_memory.json and prints a table.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# name: (model, LoRA rank (0 = full fine-tune), batch_size (completions), max_new_tokens)
CASES = {
    "tiny-full": ("rlvr-base", 0, 16, 32),
    "smol-full": ("SmolLM2-135M-Instruct", 0, 16, 32),
    "smol-lora": ("SmolLM2-135M-Instruct", 16, 16, 32),
    "smol-lora-b32-t64": ("SmolLM2-135M-Instruct", 16, 32, 64),
    "qwen-lora": ("Qwen2.5-0.5B-Instruct", 16, 8, 32),
}
# the regime Lab 08's table quotes (64 completions of 256 tokens: over 4096 scored tokens a step, so TRL's fused head
# works in full tiles); on CPU a step of these takes minutes, so they run with --device cuda (--cases to choose)
LAB_CASES = {
    "smol-full-b64-t256": ("SmolLM2-135M-Instruct", 0, 64, 256),
    "smol-lora-b64-t256": ("SmolLM2-135M-Instruct", 16, 64, 256),
    "qwen-lora-b64-t256": ("Qwen2.5-0.5B-Instruct", 16, 64, 256),
    "qwen-full-b64-t256": ("Qwen2.5-0.5B-Instruct", 0, 64, 256),
}
ALL_CASES = CASES | LAB_CASES
GROUP_SIZE, STEPS, N_TRAIN = 8, 2, 256
# glibc's malloc by default raises its mmap threshold (up to 32 MiB) after big frees, so later freed blocks stay
# in the heap and in RSS; a fixed 128 KiB threshold returns every freed block over it, so RSS ~ live tensors
ALLOCATORS = {"glibc default": {},
              "glibc mmap threshold 128 KiB": {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}}
ESTIMATE = dict(grad_checkpointing=True, logits="fused", optimizer="adamw", param_bytes=4)


def maxrss():
    """Peak resident memory of this process so far, bytes (ru_maxrss is KiB on Linux)."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def worker(case, device="cpu"):
    """One case in this (fresh) process; prints its result as one JSON line."""
    import peft  # noqa: F401  (imported before the baseline, as everything the run needs)
    import torch
    import transformers  # noqa: F401
    import trl  # noqa: F401

    from utils.models.memory import REAL_ARCHS, build_from_config, estimate_memory
    from utils.models.policy import load_policy
    from utils.rl.grpo import GRPOConfig
    from utils.rl.trl_trainer import train_with_trl
    from utils.setup import setup
    from utils.tasks.arithmetic import load_split
    from utils.verifiers.arithmetic import strict_reward

    name, rank, batch, T = ALL_CASES[case]
    setup(0, quiet=True)
    _, tok = load_policy("rlvr-base")
    dataset = load_split("train", n=N_TRAIN)
    prompt_len = max(len(tok(p)["input_ids"]) for p in dataset["prompt"])
    cuda = device == "cuda"
    peak_now = (lambda: torch.cuda.max_memory_allocated()) if cuda else maxrss  # noqa: E731
    baseline = peak_now()
    policy = build_from_config(name) if name in REAL_ARCHS else load_policy(name)[0]
    policy.to(device).train()
    built = peak_now()
    est = estimate_memory(policy, batch, prompt_len, T, lora_rank=rank, device=device, **ESTIMATE)
    peft_config = peft.LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules="all-linear",
                                  task_type="CAUSAL_LM") if rank else None
    cfg = GRPOConfig(steps=STEPS, batch_size=batch, group_size=GROUP_SIZE, max_new_tokens=T, eval_every=0,
                     track_kl=False)
    history, trainer = train_with_trl(policy, tok, dataset, strict_reward, cfg, progress=False,
                                      peft_config=peft_config, use_cpu=not cuda)
    peak = peak_now()
    secs = [r["seconds"] for r in history]
    step_s = [b - a for a, b in zip([0.0] + secs[:-1], secs)]
    print("RESULT " + json.dumps({
        "case": case, "model": name, "lora_rank": rank, "batch_size": batch, "group_size": GROUP_SIZE,
        "prompt_len": prompt_len, "max_new_tokens": T, "completion_len": [r["completion_len"] for r in history],
        "threads": torch.get_num_threads(), "device": torch.cuda.get_device_name() if cuda else "cpu",
        "baseline_rss": baseline, "build_delta": built - baseline,
        "measured_peak_delta": peak - baseline, "estimate": est, "estimate_total": est["total"],
        "ratio_measured_over_estimate": (peak - baseline) / est["total"], "seconds_per_step": step_s,
        "trainable_params_trl": sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="+", choices=list(ALL_CASES), default=None)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--out", default=None, help="write the results here after every case (a partial run too)")
    ap.add_argument("--worker", choices=list(ALL_CASES), default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.device)
    from utils.setup import environment

    runs = []

    def write(path):
        with open(path, "w") as f:
            json.dump({"environment": environment(), "cases": {c: ALL_CASES[c] for c in {r["case"] for r in runs}},
                       "estimate_options": ESTIMATE, "steps": STEPS, "runs": runs}, f, indent=1)
    default = list(CASES) + (list(LAB_CASES) if args.device == "cuda" else [])
    allocators = ALLOCATORS.items() if args.device == "cpu" else [("torch.cuda caching allocator", {})]
    for case, (alloc, env) in [(c, a) for c in args.cases or default for a in allocators]:
        load = os.getloadavg()[0]
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", case, "--device", args.device],
                           capture_output=True, text=True, cwd=ROOT, env=os.environ | env)
        line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
        if p.returncode or not line:
            print(f"{case}: failed (rc {p.returncode})\n{p.stderr[-3000:]}", flush=True)
            runs.append({"case": case, "allocator": alloc, "failed": p.stderr[-3000:]})
            if args.out:
                write(args.out)
            continue
        r = json.loads(line[0][len("RESULT "):]) | {"allocator": alloc, "load_average_before": load}
        runs.append(r)
        mb = {k: r[k] / 2**20 for k in ("estimate_total", "measured_peak_delta")}
        print(f"{case:18s} {alloc:29s} estimate {mb['estimate_total']:6.0f} MB  "
              f"measured {mb['measured_peak_delta']:6.0f} MB  "
              f"ratio {r['ratio_measured_over_estimate']:.2f}  s/step "
              + " ".join(f"{s:.1f}" for s in r["seconds_per_step"]), flush=True)
        if args.out:
            write(args.out)
    if args.out:
        print(f"wrote {args.out}")
        return
    if args.cases:
        print("(a partial run: not written to the results)")
        return
    name = "lab08_memory.json" if args.device == "cpu" else f"lab08_memory_{args.device}.json"
    path = os.path.join(ROOT, "benchmarks", "results", name)
    write(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Sampling throughput on trace-length completions (Lab 06): the course's sampler against HF `generate`. Usage:

    python benchmarks/trace_sampling.py      # about two minutes on a 2-core CPU

The trace model (data/trace_model) completes test prompts of the scratchpad task at temperature 1 with at most
64 new tokens (its traces are 20 to 43 tokens), at two batch sizes: 64 completions (8 prompts x 8, one training
step of Lab 06) and 400 (100 prompts x 4, one evaluation batch). Each repeat times both samplers back to back on
the same prompts, in alternating order, so machine noise hits both; the ratio is taken within each repeat and
the median of 7 repeats is reported, with completions/s and tokens/s (completion tokens, EOS included, padding
not). HF generate gets the same left-padded batch and attention mask, do_sample=True, top_k=0 (no truncation of
the distribution, as ours). Lab 06 needs ours >= 1.5x. Writes benchmarks/results/trace_sampling.json.

Ours is utils.models.policy.sample: for the course's GPT-2 models it runs utils/models/decode.py (the same
logits as transformers' forward pass to rounding, with a preallocated cache and a dozen tensor calls a step)
and drops finished rows from the batch while at least 16 steps remain.
"""
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from utils.setup import environment, setup  # noqa: E402

BATCHES = {"training step: 8 prompts x 8": (8, 8), "evaluation: 100 prompts x 4": (100, 4)}
MAX_NEW, REPEATS, NEEDED = 64, 7, 1.5


def ours(model, tok, prompts, k, seed):
    import torch

    from utils.models.policy import sample
    ro = sample(model, tok, prompts, k=k, max_new_tokens=MAX_NEW, generator=torch.Generator().manual_seed(seed))
    return int(ro.completion_mask.sum())


def hf(model, tok, prompts, k, seed):
    import torch

    from utils.models.policy import encode_prompts
    ids, mask = encode_prompts(tok, prompts)
    torch.manual_seed(seed)
    out = model.generate(input_ids=ids.repeat_interleave(k, 0), attention_mask=mask.repeat_interleave(k, 0),
                         do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=MAX_NEW,
                         pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    new = out[:, ids.shape[1]:]
    # tokens up to and including the first EOS (the rest is padding)
    eos = (new == tok.eos_token_id).int()
    after = eos.cumsum(1) - eos  # > 0 after the first EOS
    return int(((after == 0) & (new != tok.pad_token_id)).sum())


def main():
    setup(seed=0)
    from utils.models.policy import TRACE, load_policy
    from utils.tasks.scratchpad import load_split

    model, tok = load_policy(TRACE)
    test = load_split("test")
    results = {}
    for name, (n_prompts, k) in BATCHES.items():
        prompts = test["prompt"][:n_prompts]
        ours(model, tok, prompts, k, 0), hf(model, tok, prompts, k, 0)  # warm-up
        rows = []
        for r in range(REPEATS):
            row = {}
            for label in (("ours", "hf") if r % 2 == 0 else ("hf", "ours")):
                t0 = time.perf_counter()
                tokens = (ours if label == "ours" else hf)(model, tok, prompts, k, r)
                dt = time.perf_counter() - t0
                row[label] = {"seconds": dt, "completions_per_s": n_prompts * k / dt, "tokens_per_s": tokens / dt}
            row["ratio"] = row["hf"]["seconds"] / row["ours"]["seconds"]
            rows.append(row)
        med = lambda who, key: statistics.median(r[who][key] for r in rows)  # noqa: E731
        results[name] = {"completions": n_prompts * k, "repeats": rows,
                         "ratio_median": statistics.median(r["ratio"] for r in rows),
                         "ours": {k2: med("ours", k2) for k2 in ("completions_per_s", "tokens_per_s")},
                         "hf": {k2: med("hf", k2) for k2 in ("completions_per_s", "tokens_per_s")}}
        res = results[name]
        print(f"{name}: ours {res['ours']['completions_per_s']:.0f} completions/s ({res['ours']['tokens_per_s']:.0f} "
              f"tokens/s), HF generate {res['hf']['completions_per_s']:.0f} ({res['hf']['tokens_per_s']:.0f}); "
              f"ratio {res['ratio_median']:.2f} (median of {REPEATS}; range "
              f"{min(r['ratio'] for r in rows):.2f}-{max(r['ratio'] for r in rows):.2f})", flush=True)
    out = {"environment": environment(), "max_new_tokens": MAX_NEW, "needed": NEEDED, "batches": results}
    with open(os.path.join(ROOT, "benchmarks", "results", "trace_sampling.json"), "w") as f:
        json.dump(out, f, indent=1)
    ok = all(r["ratio_median"] >= NEEDED for r in results.values())
    print(("OK" if ok else "BELOW TARGET") + f": ours / HF generate >= {NEEDED} at every batch size: {ok}")


if __name__ == "__main__":
    main()

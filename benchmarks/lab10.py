"""Lab 10's multi-seed study of off-policy GRPO: a stale sampler, a low-precision sampler and the corrections.
Usage:

    python benchmarks/lab10.py --part staleness              # lag 0, 1, 2, 4, 8, uncorrected; seeds 0, 1, 2
    python benchmarks/lab10.py --part mismatch               # a bfloat16 / float16 sampler at lag 0, and corrected
    python benchmarks/lab10.py --part corrections            # lag 4 under each of TRL's four corrections
    python benchmarks/lab10.py --part zoo                    # the loss zoo at lag 4 (uncorrected)
    python benchmarks/lab10.py --part zoo-fair               # GSPO and LUSPO at lag 4 at their papers' clip width
    python benchmarks/lab10.py --part groups                 # G = 2, 4, 8 at 256 completions a step
    python benchmarks/lab10.py --part updates                # lag 4, 4 updates a batch, corrected or not
    python benchmarks/lab10.py --part drift                  # lag 0 with a drift probe: 1..8 steps from step 50
    python benchmarks/lab10.py --part controls               # on-policy controls: 4 updates, SAPO, CISPO at lag 0
    python benchmarks/lab10.py --part distance               # reuse or distance: 4 updates at lag 1 against 1 at 6..
    python benchmarks/lab10.py --part groups-budget          # G = 2 against G = 16 on the same prompts (1/8 rollouts)
    python benchmarks/lab10.py --part guards                 # lag 4, 4 updates: TRL's no-correction arm, delta, OPSM
    python benchmarks/lab10.py --part guards --add --conditions "lag 18, recompute"   # runs added to a stored part
    python benchmarks/lab10.py --part staleness --jobs 8     # runs side by side (a machine with many cores)

Each run is Lab 01's recipe (the shipped base model, the arithmetic task's train split, the strict reward, batch
256 in groups of 8, lr 1e-4, beta 0) with utils.rl.rollout.StaleRollout as its sampler, evaluated every 20 steps
on 500 test problems (held-out pass@1, the loop's own evaluation). Recorded per run: the final held-out pass@1,
its curve, and per step the sampler's distance from the policy (mean |log ratio| a token, the share of ratios
outside the clip), the loss's clip fraction, the entropy, and the seconds spent sampling and updating (for the
pipeline model: an overlapped pipeline's step takes max(sampling, update), a sequential one their sum).
Writes benchmarks/results/lab10.json (one entry per part) and prints a table.

The distance part's five lines (REVIEWING.md; issue 57):
  claim     a correction matters where the sampler is far from the policy in optimizer updates, whether or not a
            batch is reused (the lab said: exactly when a batch is reused)
  control   one update a batch at the same distance in updates: lag 6 against four updates at lag 1 (4-7 behind),
            lag 18 against four at lag 4 (16-19, the updates part)
  baseline  lag 0 (the staleness part) and four updates at lag 0 (the controls part): reuse with no distance
  matched   the recipe, prompts, seeds and evaluation; the 4-update arms take four times the optimizer updates on the
            same samples (that is what reuse is), the distance in updates is matched, |log ratio| is measured
  changes   lag 18 learning as lag 0 does while four updates at lag 4 fail: then it is reuse, not distance

The guards part's five lines (issue 57, items 8-9), written before it ran:
  claim     the correction's gain at four updates a batch, lag 4, comes from where the clip is centred (on the policy
            at the batch's first update), not from weighting tokens by the sampler's distance: TRL's no-correction
            arm (correction "recompute": old log-probs recomputed, no weights) learns as token_truncate does, and the
            guards that leave the clip on the sampler (dual-clip delta 4; OPSM at 0.3) recover less than either
  control   recompute against token_truncate (they differ only in the weights); uncorrected + delta and uncorrected
            + OPSM against uncorrected (each differs only in its guard)
  baseline  uncorrected, rerun here beside its stored runs in 'updates'; four updates on-policy ('controls')
  matched   the recipe, prompts, seeds, evaluation, lag 4 and four updates a batch; all five arms in one environment
            ('updates' ran in another, so its uncorrected and token_truncate arms are rerun here); both values fixed
            before running: delta 4 (INTELLECT-2's, arXiv 2505.07291; TRL asks for > 1 + eps = 1.2), threshold 0.3
            (the uncorrected arm's stored mean |log ratio| a token, 0.27-0.32: a negative sequence is dropped once
            its tokens moved down from the sampler by more than a typical token's distance)
  changes   recompute below token_truncate on every seed by more than the seeds' spread: the weights, and so the
            distance, matter; delta or OPSM as high as token_truncate: a guard on the sampler's clip suffices, and
            what failed was the unbounded negative-advantage term, not the centre of the clip
  second five lines (a review's arms, written before they ran):
  claim     the weights help without reuse too: one update a batch at lag 18 under recompute (no weights; the ratio
            is 1 at its only update, so nothing is clipped) learns less than token_truncate at lag 18 (distance
            part), as it did at four updates; a tighter dual clip (delta 1.5) recovers more than delta 4 did
  control   lag 18 recompute against lag 18 uncorrected and token_truncate (distance part, same environment: the
            guards' reruns repeated the stored arms to the last digit); delta 1.5 against delta 4 and uncorrected
  baseline  lag 0 (staleness part); TRL's pairing, recompute + OPSM 0.3, against recompute alone
  matched   recipe, prompts, seeds, evaluation; lag 18 at one update is 18 updates behind, as lag 4 at four (16-19)
  changes   lag 18 recompute within the seeds' spread of token_truncate: without reuse the weights add nothing;
            delta 1.5 at or below delta 4: the cap's size is not what the small gain depended on
  result (2026-11-29): the claim was refuted (recompute fell short of token_truncate on every seed, by 0.036-0.056);
  a review added that the 0.3 threshold came from an unsigned token mean while the mask reads a signed sequence
  mean (25-27% of sequences past it), and that on the uncorrected loss OPSM mostly drops already-clipped tokens
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import run_all, run_options, store_runs  # noqa: E402
from utils.setup import setup  # noqa: E402

CONFIG = dict(steps=100, batch_size=256, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=8,
              eps_low=0.2, eps_high=0.2, beta=0.0, updates_per_batch=1, eval_every=20, eval_n=500, seed=0,
              track_kl=False)
PARTS = {  # part -> {condition: StaleRollout's fields}
    "staleness": {f"lag {k}": dict(lag=k) for k in (0, 1, 2, 4, 8)},
    "mismatch": {"float32 sampler": dict(), "bfloat16 sampler": dict(sampler_dtype="bfloat16"),
                 "float16 sampler": dict(sampler_dtype="float16"),
                 "bfloat16, token_truncate": dict(sampler_dtype="bfloat16", correction="token_truncate"),
                 "bfloat16, sequence_mask": dict(sampler_dtype="bfloat16", correction="sequence_mask")},
    "corrections": {f"lag 4, {c or 'uncorrected'}": dict(lag=4, correction=c)
                    for c in (None, "token_truncate", "token_mask", "sequence_truncate", "sequence_mask")},
    # the loss zoo on stale data (lag 4, uncorrected): each objective with TRL's defaults for its own parameters
    "zoo": {f"lag 4, {name}": dict(lag=4, cfg=cfg) for name, cfg in (
        ("grpo", {}), ("dapo", {"loss_type": "dapo"}), ("dr_grpo", {"loss_type": "dr_grpo", "scale_std": False}),
        ("bnpo", {"loss_type": "bnpo"}), ("cispo", {"loss_type": "cispo"}), ("sapo", {"loss_type": "sapo"}),
        ("vespo", {"loss_type": "vespo"}), ("gspo", {"ratio_level": "sequence"}),
        ("luspo", {"loss_type": "luspo", "ratio_level": "sequence"}))},
    # the sequence-level objectives at their papers' own clip width (GSPO, arXiv 2507.18071: 3e-4 and 4e-4 on the
    # length-normalised sequence ratio), the zoo's comparison made fair to them
    "zoo-fair": {f"lag 4, {name}, eps 3e-4/4e-4": dict(lag=4, cfg=dict(cfg, eps_low=3e-4, eps_high=4e-4))
                 for name, cfg in (("gspo", {"ratio_level": "sequence"}),
                                   ("luspo", {"loss_type": "luspo", "ratio_level": "sequence"}))},
    # on-policy runs with utils.rl.staleness.drift_probe: how far 1..8 steps carry the policy from a batch's sampler,
    # measured from step 50 (the probe leaves the run's training as it is: these runs are lag 0's)
    "drift": {"lag 0, drift probe at step 50": dict(probe=True)},
    # the matched controls on-policy: four updates a batch at lag 0 (where corrected and uncorrected are one loss), and
    # SAPO and CISPO at lag 0 (is their place in the zoo about staleness?)
    "controls": {"lag 0, 4 updates": dict(lag=0, cfg={"updates_per_batch": 4}),
                 "lag 0, sapo": dict(lag=0, cfg={"loss_type": "sapo"}),
                 "lag 0, cispo": dict(lag=0, cfg={"loss_type": "cispo"})},
    # the corrections where the clip can bind: four updates a batch, so the "old" policy of the corrected loss is the
    # policy before the first of them (decoupled PPO: the clip against it, the weight against the sampler)
    "updates": {f"lag 4, 4 updates, {c or 'uncorrected'}": dict(lag=4, correction=c, cfg={"updates_per_batch": 4})
                for c in (None, "token_truncate", "sequence_mask")},
    # small groups on a budget (arXiv 2510.00977): the same 256 completions a step in groups of 2, 4 or 8, on-policy
    "groups": {f"G = {g}": dict(cfg={"group_size": g}) for g in (2, 4, 8)},
    # the paper's own comparison: the same 16 prompts a step in groups of 16 (256 completions) or of 2 (32: an eighth
    # of the rollouts), with G = 8 at 32 completions as the budget's control
    "groups-budget": {f"G = {g}, 16 prompts a step ({16 * g} completions)": dict(cfg={"group_size": g,
                                                                                     "batch_size": 16 * g})
                      for g in (16, 2)} | {"G = 8, 4 prompts a step (32 completions)": dict(
                          cfg={"group_size": 8, "batch_size": 32})},
    # reuse or distance (issue 57): a batch k batches stale and used for u updates is k*u to k*u + u - 1 optimizer
    # updates behind. Four updates at lag 1 (4-7 behind) against one at lag 6; four at lag 4 (16-19, the updates
    # part) against one at lag 18; each uncorrected and under token_truncate
    "distance": {f"lag {k}{', 4 updates' if u == 4 else ''}, {c or 'uncorrected'}": dict(
        lag=k, correction=c, cfg={"updates_per_batch": u})
        for k, u in ((1, 4), (6, 1), (18, 1)) for c in (None, "token_truncate")},
    # the guards (issue 57, items 8-9) where the uncorrected arm failed worst, lag 4 with four updates a batch: TRL's
    # own arm with no correction (old log-probs recomputed, no weights), and the uncorrected loss with TRL's two-sided
    # clip (delta) or DeepSeek-V3.2's off-policy sequence masking; uncorrected and token_truncate rerun beside them
    "guards": {f"lag 4, 4 updates, {name}": dict(lag=4, cfg={"updates_per_batch": 4} | cfg, **fields)
               for name, fields, cfg in (
                   ("uncorrected", {}, {}), ("token_truncate", {"correction": "token_truncate"}, {}),
                   ("recompute", {"correction": "recompute"}, {}), ("uncorrected, delta 4", {}, {"delta": 4.0}),
                   ("uncorrected, OPSM 0.3", {"off_policy_mask_threshold": 0.3}, {}),
                   # a review's arms (the guards' second five lines): TRL's pairing of masking with no weights, and a
                   # tighter dual clip (delta 4 capped under 0.5% of tokens)
                   ("recompute, OPSM 0.3", {"correction": "recompute", "off_policy_mask_threshold": 0.3}, {}),
                   ("uncorrected, delta 1.5", {}, {"delta": 1.5}))}
              # the weights without reuse: one update a batch at the distance of four at lag 4 (the distance part's
              # lag 18 arms, uncorrected and token_truncate, are its neighbours)
              | {"lag 18, recompute": dict(lag=18, correction="recompute")},
}


def lab_config(**kw):
    from utils.rl.grpo import GRPOConfig

    return GRPOConfig(**dict(CONFIG, **kw))


def run(condition, fields, seed, steps):
    fields = dict(fields)
    cfg_kw, probe = fields.pop("cfg", {}), fields.pop("probe", False)
    import copy

    from utils.models.policy import load_policy
    from utils.rl.loop import train_grpo
    from utils.rl.rollout import StaleRollout
    from utils.rl.staleness import drift_of, drift_probe, drift_summary
    from utils.tasks.arithmetic import load_split
    from utils.verifiers.arithmetic import strict_reward

    setup(seed=seed, quiet=True)
    base, tok = load_policy()
    policy = copy.deepcopy(base)
    train, test = load_split("train"), load_split("test")
    t = time.time()
    cfg = lab_config(seed=seed, steps=steps, **cfg_kw)
    callback = drift_probe(tok, train["prompt"], cfg) if probe else None
    hist = train_grpo(policy, tok, train["prompt"], train["answer"], strict_reward, cfg, test["prompt"], test["answer"],
                      progress=False, rollout=StaleRollout(**fields), callback=callback)
    keys = ("staleness", "stale_abs_log_ratio", "stale_ratio_out", "clip_frac", "entropy", "reward_mean",
            "zero_spread_frac", "sample_seconds", "measure_seconds", "seconds", "is_weight_mean", "stale_kl",
            "delta_frac", "opsm_over_frac", "opsm_dropped_frac")
    out = {"drift": drift_summary(drift_of(hist))} if probe else {}
    hist = [{k: v for k, v in h.items() if not k.startswith("drift_")} for h in hist]
    return out | {"condition": condition, "fields": fields, "cfg": cfg_kw, "seed": seed, "steps": len(hist),
            "seconds": time.time() - t,
            "final": hist[-1]["heldout_pass@1"],
            "curve": [(r["step"], r["heldout_pass@1"]) for r in hist if r["heldout_pass@1"] is not None],
            "per_step": {k: [r.get(k) for r in hist] for k in keys}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=tuple(PARTS), default="staleness")
    args = run_options(ap).parse_args()
    args.steps = args.steps or CONFIG["steps"]
    setup(seed=0, quiet=True)
    from utils.eval.metrics import heldout_metrics
    from utils.models.policy import load_policy
    from utils.tasks.arithmetic import load_split

    base, tok = load_policy()
    test = load_split("test")
    before = heldout_metrics(base, tok, {"heldout": (test["prompt"], test["answer"])}, n=CONFIG["eval_n"])
    conds = {c: f for c, f in PARTS[args.part].items() if not args.conditions or c in args.conditions}
    jobs = [(c, f, s, args.steps) for c, f in conds.items() for s in args.seeds]
    runs = run_all(run, jobs, args.jobs, args.threads)
    for r in runs:
        ps = r["per_step"]
        mean = lambda k: sum(v for v in ps[k] if v is not None) / max(1, sum(v is not None for v in ps[k]))  # noqa
        print(f"{r['condition']:28s} seed {r['seed']}: pass@1 {r['final']:.3f}  |log ratio| "
              f"{mean('stale_abs_log_ratio'):.4f}  out of clip {mean('stale_ratio_out'):.3f}  clip_frac "
              f"{mean('clip_frac'):.3f}  entropy {ps['entropy'][-1]:.3f}  sampling {mean('sample_seconds'):.3f} "
              f"s/step  run {r['seconds']:.0f} s  curve " + " ".join(f"{p:.3f}" for _, p in r["curve"])
              + "".join(f"  {k} {mean(k):.4f}" for k in ("delta_frac", "opsm_over_frac", "opsm_dropped_frac")
                        if any(v is not None for v in ps.get(k, []))), flush=True)
    print(f"base: held-out pass@1 {before['heldout_pass@1']:.3f}")
    store_runs("lab10", args, CONFIG, runs, {"base_heldout_pass@1": before["heldout_pass@1"]})


if __name__ == "__main__":
    main()

"""Lab 07's multi-seed study: which prompts to train on, whether dynamic sampling pays for its extra samples,
whether an easy-to-hard order helps, and how held-out accuracy grows with RL compute at four model sizes.
Usage:

    python benchmarks/lab07.py --part data      # curation, dynamic sampling, curriculum; seeds 0-2: ~8 min
    python benchmarks/lab07.py --part scaling   # four models x 3 seeds, 80 steps each: ~16 min
    python benchmarks/lab07.py --part controls --jobs 8   # the data part's controls and a no-signal regime
    python benchmarks/lab07.py --part data --seeds 0 --steps 6   # a quick look (not written to the results)

Every run trains a shipped scratchpad model with GRPO on the outcome reward (utils.runs.traces.
train_on_traces, the notebook's own path), so the notebook's seed-0 runs are this benchmark's. Compute is
counted in completions sampled (the history's completions_sampled): a step of 64 completions costs 64, and a
dynamic-sampling step that draws three batches to fill one costs 192. Held-out accuracy is answer pass@1 on
test problems the model never trains on (its first eval_n during training, one sample each; all 600, eval_k
samples each, at the end, per difficulty level).

The data part's conditions (DATA_CONDITIONS), all at DATA_CONFIG:
    full            all 6000 train prompts, drawn uniformly (also the curriculum's "uniform mix")
    curated         the prompts whose shipped base pass rate (n=16, data/scratchpad/train_pass_rates.json)
                    lies in the sweet spot [0.3, 0.7]
    random subset   as many prompts as "curated", drawn at random (the control: is it the choice or the size?)
    dynamic         full data with DAPO's dynamic sampling, the same number of gradient steps
    dynamic, equal completions  the same, stopped when it has sampled as many completions as "full" did
    easy to hard    CURRICULUM: 2-digit problems, then 2-3, then 2-4 digits, a third of the steps each
    hard only       4-digit problems only
The scaling part: each of utils.TRACE_SIZES on the full data at SCALING_CONFIG; utils.eval.scaling fits
ScaleRL's sigmoid (arXiv 2510.13786) to the seed-mean curve, and a second fit on the first half of the
compute predicts the second half. Writes its part into benchmarks/results/lab07.json and prints a table.
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import run_all, run_options, write_part  # noqa: E402
from utils.setup import environment, setup  # noqa: E402

# the notebook's config (solutions/07_data_and_compute.ipynb shows the same values and checks them)
DATA_CONFIG = dict(steps=30, batch_size=64, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=64,
                   eps_low=0.2, eps_high=0.2, beta=0.0, loss_type="grpo", eval_every=10, eval_n=200,
                   track_kl=False)
DATA_EVAL_K = 2
BAND = (0.3, 0.7)                                  # the sources' sweet spot, on the shipped pass rates
CURRICULUM = [(10, [2]), (20, [2, 3]), (30, [2, 3, 4])]
DATA_CONDITIONS = ("full", "curated", "random subset", "dynamic", "dynamic, equal completions", "easy to hard",
                   "hard only")
# The controls the data part lacked (issue 35, items 8-9), at DATA_CONFIG, in part "controls":
#   curated's mix, random   a random subset with the curated set's number of prompts at each level: is it the
#                           choice of prompts or the easier mix?
#   pruned                  16 samples a prompt, the 8 with the highest rewards trained on (rollout pruning);
#                           "pruned, equal completions" stops it at the full run's 1920 completions
#   easy to hard, shuffled  the curriculum's per-step pools in a random order: the same exposure to each level
# and a regime with no signal at the start: 5-digit problems, which the trace model never answers (base pass@1 0 on
# the ood split, which judges these runs). Training rows: the train split (2-4 digits) and NO_SIGNAL_FRESH fresh
# 5-digit problems (none in ood). "2-4 only" (transfer alone), "5 only", "2-4 then 5" (20 steps of 2-4 digits, then
# 10 of 5) and its pools shuffled (the same exposure, no order).
CONTROL_CONDITIONS = ("curated's mix, random", "pruned", "pruned, equal completions", "easy to hard, shuffled",
                      "2-4 only", "5 only", "2-4 then 5", "2-4 then 5, shuffled")
NO_SIGNAL = ("2-4 only", "5 only", "2-4 then 5", "2-4 then 5, shuffled")
NO_SIGNAL_FRESH, NO_SIGNAL_SEED = 2000, 99
NO_SIGNAL_SCHEDULE = [(20, [2, 3, 4]), (30, [5])]
PRUNE = 2
SCALING_CONFIG = dict(DATA_CONFIG, steps=80, eval_every=8, eval_n=300)
SCALING_EVAL_K = 1
KEEP = ("completions_sampled", "train_seconds", "reward_mean", "zero_spread_frac", "drawn_zero_spread_frac",
        "sampling_rounds", "groups_kept", "completion_len", "heldout_pass@1")


def data_condition(name, train, rates, seed, steps):
    """(train rows, pools or None, changes to the config) for one of DATA_CONDITIONS."""
    from utils.tasks import curation
    if name == "curated":
        return train.select(curation.sweet_spot(rates, *BAND)), None, {}
    if name == "random subset":
        size = len(curation.sweet_spot(rates, *BAND))
        return train.select(curation.random_subset(len(train), size, seed=seed)), None, {}
    if name == "dynamic":
        return train, None, {"dynamic_sampling": True}
    if name == "dynamic, equal completions":
        return train, None, {"dynamic_sampling": True, "max_completions": steps * DATA_CONFIG["batch_size"]}
    if name == "easy to hard":
        schedule = [(round(u * steps / DATA_CONFIG["steps"]), lv) for u, lv in CURRICULUM]
        return train, curation.level_pools(curation.curriculum(schedule, steps), train["digits"]), {}
    if name == "hard only":
        return train, curation.level_pools([[4]] * steps, train["digits"]), {}
    if name in ("full", "pruned", "pruned, equal completions"):  # pruning is the rollout's (run_data)
        return train, None, {}
    if name == "curated's mix, random":
        return train.select(curation.mix_matched_subset(train["digits"], curation.sweet_spot(rates, *BAND), seed)), \
            None, {}
    if name == "easy to hard, shuffled":
        _, pools, _ = data_condition("easy to hard", train, rates, seed, steps)
        return train, curation.shuffled(pools, seed), {}
    if name in NO_SIGNAL:
        schedule = {"2-4 only": [(steps, [2, 3, 4])], "5 only": [(steps, [5])]}.get(
            name, [(round(u * steps / DATA_CONFIG["steps"]), lv) for u, lv in NO_SIGNAL_SCHEDULE])
        pools = curation.level_pools(curation.curriculum(schedule, steps), train["digits"])
        return train, curation.shuffled(pools, seed) if name.endswith("shuffled") else pools, {}
    raise ValueError(f"unknown condition {name!r}; allowed: {DATA_CONDITIONS + CONTROL_CONDITIONS}")


def no_signal_train():
    """The train split and NO_SIGNAL_FRESH fresh 5-digit problems (none in the ood split), one Dataset."""
    from datasets import Dataset, concatenate_datasets

    from utils.tasks import scratchpad
    train = scratchpad.load_split("train")
    ood = set(scratchpad.load_split("ood")["prompt"])
    fresh = scratchpad.fresh_problems(NO_SIGNAL_FRESH, 5, NO_SIGNAL_SEED, exclude=ood)
    return concatenate_datasets([train, Dataset.from_list([{k: p[k] for k in train.column_names} for p in fresh])
                                 .cast(train.features)])


def summary(r, condition, seed, model="gpt2-4x128"):
    """What the results file keeps of a train_on_traces result."""
    h = r["history"]
    sampled, curve = 0, []
    for rec in h:
        sampled += rec["completions_sampled"]
        if rec.get("heldout_pass@1") is not None:
            curve.append((rec["step"], sampled, rec["train_seconds"], rec["heldout_pass@1"]))
    return {"condition": condition, "model": model, "seed": seed, "steps": len(h), "seconds": round(r["seconds"], 1),
            "completions_sampled": sampled, "curve": curve,   # (step, completions so far, train seconds, pass@1)
            "history": [{k: rec.get(k) for k in ("step",) + KEEP} for rec in h],
            "final": {k: v for k, v in r["final"].items()}}


def run_data(condition, seed, steps, rates):
    from utils.models.policy import TRACE, load_policy
    from utils.rl.grpo import GRPOConfig
    from utils.runs.traces import train_on_traces
    from utils.tasks import scratchpad
    from utils.verifiers.traces import outcome_reward

    setup(seed, quiet=True)
    base, tok = load_policy(TRACE)
    no_signal = condition in NO_SIGNAL
    train, pools, changes = data_condition(condition, no_signal_train() if no_signal else
                                           scratchpad.load_split("train"), rates, seed, steps)
    prune = PRUNE if condition.startswith("pruned") else 1
    if condition == "pruned, equal completions":
        changes = {"max_completions": steps * DATA_CONFIG["batch_size"]}
    cfg = GRPOConfig(**dict(DATA_CONFIG, **changes, steps=steps, seed=seed))
    r = train_on_traces(base, tok, outcome_reward, cfg, train, scratchpad.load_split("ood" if no_signal else "test"),
                        eval_k=DATA_EVAL_K, progress=False, pools=pools, prune=prune)
    return summary(r, condition, seed) | {"train_size": len(train), "changes": changes}


def run_scaling(model, seed, steps):
    from utils.models.policy import load_policy
    from utils.rl.grpo import GRPOConfig
    from utils.runs.traces import train_on_traces
    from utils.tasks import scratchpad
    from utils.verifiers.traces import outcome_reward

    setup(seed, quiet=True)
    base, tok = load_policy(model)
    cfg = GRPOConfig(**dict(SCALING_CONFIG, steps=steps, seed=seed))
    r = train_on_traces(base, tok, outcome_reward, cfg, scratchpad.load_split("train"),
                        scratchpad.load_split("test"), eval_k=SCALING_EVAL_K, progress=False)
    return summary(r, "scaling", seed, model) | {"parameters": sum(p.numel() for p in base.parameters())}


def base_numbers(models, config, eval_k, split="test"):
    """Each model's held-out numbers before RL: pass@1 on the first eval_n problems of `split` (one sample, the
    curve's starting point R0, measured as train_grpo measures it) and trace_metrics on all of them."""
    from utils.eval.metrics import heldout_metrics
    from utils.eval.traces import trace_metrics
    from utils.models.policy import load_policy
    from utils.tasks import scratchpad
    from utils.verifiers.traces import outcome_reward

    test, out = scratchpad.load_split(split), {}
    for m in models:
        setup(0, quiet=True)
        model, tok = load_policy(m)
        r0 = heldout_metrics(model, tok, {"heldout": (test["prompt"], test["answer"])}, None, config["eval_n"],
                             config["temperature"], config["max_new_tokens"], outcome_reward)["heldout_pass@1"]
        out[m] = {"heldout_pass@1": r0, "final": trace_metrics(model, tok, test, k=eval_k,
                                                               max_new_tokens=config["max_new_tokens"])}
    return out


def fits(runs, base):
    """Per model: the sigmoid fitted to the seed-mean curve (all points), and one fitted to the points up to
    half the compute, with its error on the rest."""
    import numpy as np

    from utils.eval.scaling import fit_sigmoid, predict
    out = {}
    for m in base:
        rs = [r for r in runs if r["model"] == m]
        if not rs:
            continue
        C = np.array([c for _, c, _, _ in rs[0]["curve"]], dtype=float)
        R = np.mean([[p for *_, p in r["curve"]] for r in rs], axis=0)
        R0 = base[m]["heldout_pass@1"]
        full, half = fit_sigmoid(C, R, R0), C <= C.max() / 2
        early = fit_sigmoid(C[half], R[half], R0)
        err = predict(early, C[~half]) - R[~half]
        out[m] = {"full": full, "first_half": early, "C": C.tolist(), "R_mean": R.tolist(),
                  "R_seeds": [[p for *_, p in r["curve"]] for r in rs],
                  "prediction_error_second_half": err.tolist(), "max_abs_prediction_error": float(np.abs(err).max())}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("data", "scaling", "controls"), default="data")
    args = run_options(ap, conditions_help="data: conditions; scaling: model names").parse_args()
    from utils import TRACE_SIZES
    from utils.tasks.curation import load_pass_rates

    data = args.part in ("data", "controls")
    config = DATA_CONFIG if data else SCALING_CONFIG
    eval_k = DATA_EVAL_K if data else SCALING_EVAL_K
    steps = args.steps or config["steps"]
    todo = args.conditions or list({"data": DATA_CONDITIONS, "controls": CONTROL_CONDITIONS}.get(args.part,
                                                                                                   TRACE_SIZES))
    base = base_numbers(["gpt2-4x128"] if data else todo, config, eval_k)
    if args.part == "controls":  # the no-signal runs are judged on the ood split (5 digits)
        base["gpt2-4x128 on ood"] = base_numbers(["gpt2-4x128"], config, eval_k, "ood")["gpt2-4x128"]
    rates = load_pass_rates()
    jobs = [(c, seed, steps, rates) if data else (c, seed, steps) for c in todo for seed in args.seeds]
    fn = run_data if data else run_scaling
    done = run_all(fn, jobs, args.jobs, args.threads)
    runs = []
    for i, job in enumerate(jobs):
        c, seed = job[0], job[1]
        r = done[i]
        runs.append(r)
        f = r["final"]
        print(f"{c:28s} seed {seed}: pass@1 {f['pass@1']:.3f}  by digits "
              + " ".join(f"{d}:{v['pass@1']:.3f}" for d, v in f["by_digits"].items())
              + f"  completions {r['completions_sampled']}  steps {r['steps']}  train "
                f"{r['curve'][-1][2]:.0f} s  curve " + " ".join(f"{p:.2f}" for *_, p in r["curve"]), flush=True)
    print("\nbase: " + "  ".join(f"{m} {b['heldout_pass@1']:.3f}" for m, b in base.items()))
    out_part = {"environment": environment(), "config": config, "eval_k": eval_k, "seeds": args.seeds,
                "base": base, "runs": runs}
    if args.jobs > 1:  # the environment's torch_threads is the parent's; each run had --threads
        out_part |= {"jobs": args.jobs, "threads_per_run": args.threads}
    if args.part == "scaling":
        out_part["fits"] = fits(runs, base)
        for m, f in out_part["fits"].items():
            print(f"{m:12s} A {f['full']['A']:.3f}  C_mid {f['full']['C_mid']:.0f}  B {f['full']['B']:.2f}  rmse "
                  f"{f['full']['rmse']:.3f}  | first half predicts the rest within {f['max_abs_prediction_error']:.3f}")
    if args.steps not in (None, config["steps"]) or args.conditions or args.seeds != [0, 1, 2]:
        print("(a partial run: not written to the results)")
        return
    write_part("lab07", args.part, out_part)


if __name__ == "__main__":
    main()

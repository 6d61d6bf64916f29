"""Lab 06's multi-seed study: which trace reward teaches the outcome, how length moves under each loss
aggregation, and what a short completion cap does. Usage:

    python benchmarks/lab06.py --part lab      # the notebook's config, every condition, seeds 0-2: ~10 min
    python benchmarks/lab06.py --part long     # 150 steps: outcome/process/arithmetic and the length study
    python benchmarks/lab06.py --part length   # 40 steps: the length-biased reward with and without std scaling
    python benchmarks/lab06.py --part sparse   # 40 steps on 5-digit problems: outcome against shaped
    python benchmarks/lab06.py --part objectives        # 40 steps: the outcome reward under five objectives
    python benchmarks/lab06.py --part objectives-long   # the same over 150 steps
    python benchmarks/lab06.py --part objectives-offpolicy   # 40 steps, 4 updates per batch (ratios move off 1)
    python benchmarks/lab06.py --part sequence-clip   # the same for GSPO and LUSPO at GSPO's clip range
    python benchmarks/lab06.py --part steps    # 40 steps: credit per step (process supervision) against outcome
    python benchmarks/lab06.py --part best-of-n   # no training: choosing one of 8 samples by vote or by verdicts
    python benchmarks/lab06.py --part free-length  # 100 steps of the check model: what each objective does to length
    python benchmarks/lab06.py --part lab --seeds 0 --steps 10   # a quick look (not written to the results)

Every run is the trace model (data/trace_model) trained by utils.runs.traces.train_on_traces, the
notebook's own path, so the notebook's seed-0 runs are this benchmark's. The rewards (utils/verifiers/traces.py):

    outcome     1.0 iff the final answer is right; the steps are not read
    process     the share of the right steps in the right place (partial credit)
    arithmetic  the share of written steps whose sum is true, whatever digits they add: a process reward
                that does not look at the problem, so it can be earned without solving anything
    shaped      outcome + 0.2 process + 0.1 format - 0.1 per extra step (traces.SHAPED_DEFAULTS)
    rubric      the share of traces.RUBRIC's six criteria met (well formed, one step per column, carries
                chain, true sums, answer follows the steps, answer right)
    length-biased  outcome + 0.1 per step written, right or not (a reward that correlates with length,
                as a judge that likes to see working does)
    steps       per-step credit, not one reward: each step judged as arithmetic for its column and the answer
                by whether the steps spell it (traces.step_verdicts), turned into per-token advantages
                (grpo.process_advantages); the run's recorded reward is the share of valid verdicts

Every run is judged by numbers its training reward does not see: held-out answer pass@1 during training
(the first eval_n test problems, one sample each), and at the end on all 600 test problems (k samples each,
temperature 1, seed 0): answer pass@1, CoT-pass@1 (answer and every step right, arXiv 2506.14245), steps
exactly right, well formed, the arithmetic score, completion length (right and wrong answers apart) and the
truncated share. Writes its part into benchmarks/results/lab06.json and prints a table.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import add_runs, run_all, run_options  # noqa: E402
from utils.setup import environment, setup  # noqa: E402

# the notebook's config (solutions/06_reward_design_on_traces.ipynb shows the same values and checks them)
LAB_CONFIG = dict(steps=40, batch_size=64, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=64,
                  eps_low=0.2, eps_high=0.2, beta=0.0, loss_type="grpo", eval_every=10, eval_n=200,
                  track_kl=True)
LAB_EVAL_K = 2
LAB_CONDITIONS = {  # name -> (reward, changes to the config)
    "outcome": ("outcome", {}),
    "process": ("process", {}),
    "arithmetic": ("arithmetic", {}),
    "shaped": ("shaped", {}),
    "outcome, dapo": ("outcome", {"loss_type": "dapo"}),
    "outcome, dr_grpo": ("outcome", {"loss_type": "dr_grpo"}),
    "outcome, cap 24": ("outcome", {"max_new_tokens": 24}),
    "rubric": ("rubric", {}),
    "length-biased": ("length-biased", {}),
}
# why the length-biased run loses its answers (issue 35): with scale_std each group's rewards are divided by their
# std, so in a group with no right answer the 0.1-a-step differences become advantages as large as a right
# answer's; without it they stay 10 times smaller. The lab's config, the scale_std switch crossed with the reward.
LENGTH_CONDITIONS = {"length-biased": ("length-biased", {}),
                     "length-biased, no std": ("length-biased", {"scale_std": False}),
                     "outcome": ("outcome", {}), "outcome, no std": ("outcome", {"scale_std": False})}
# shaping where it should help (issue 35): problems that give almost no signal at the start. Training on fresh
# 5-digit problems (SPARSE_TRAIN_SEED, none of them in the ood split), judged on the ood split (300 5-digit
# problems the runs never see), the lab's config otherwise.
SPARSE_CONDITIONS = {"outcome": ("outcome", {}), "shaped": ("shaped", {})}
SPARSE_TRAIN, SPARSE_TRAIN_SEED = 2000, 99
# 150 steps: the first study (lr 1e-4: at 5e-4 one or two updates broke the traces in a first trial)
LONG_CONFIG = dict(steps=150, batch_size=64, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=64,
                   eps_low=0.2, eps_high=0.2, beta=0.0, loss_type="grpo", eval_every=25, eval_n=300,
                   track_kl=False)
LONG_EVAL_K = 4
LONG_CONDITIONS = {"outcome": ("outcome", {}), "process": ("process", {}), "arithmetic": ("arithmetic", {}),
                   "outcome, dapo": ("outcome", {"loss_type": "dapo"}),
                   "outcome, dr_grpo": ("outcome", {"loss_type": "dr_grpo"})}
# the objectives side by side (issue 35, item 3): the three token-level aggregations and the two sequence-level
# objectives, GSPO (one importance ratio per sequence, each sequence weighed alike: arXiv 2507.18071) and LUSPO (the
# same ratio, each sequence's loss scaled by its length: arXiv 2602.05261); the outcome reward, scale_std on, as
# in the lab. In one part, so that every condition runs with the same code and seeds.
OBJECTIVES = {"outcome": ("outcome", {}), "outcome, dapo": ("outcome", {"loss_type": "dapo"}),
              "outcome, dr_grpo": ("outcome", {"loss_type": "dr_grpo"}),
              "outcome, gspo": ("outcome", {"ratio_level": "sequence"}),
              "outcome, luspo": ("outcome", {"loss_type": "luspo", "ratio_level": "sequence"})}
# On-policy (one update per batch) every ratio is 1 when the gradient is taken, so GSPO's gradient is GRPO's and
# LUSPO's is dr_grpo's times max_len (tests/test_grpo.py): the sequence-level objectives differ only off-policy.
# Four updates per batch (Lab 04's knob) move the ratios off 1 after the first.
OFFPOLICY = {k: (r, dict(c, updates_per_batch=4)) for k, (r, c) in OBJECTIVES.items()}
# A sequence's ratio is a geometric mean of its tokens' ratios, so it strays from 1 far less than a token's: a clip
# range of 0.2 hardly ever binds on it. GSPO's paper clips sequence ratios at 3e-4 below and 4e-4 above 1.
SEQ_CLIP = {"outcome, gspo, clip 3e-4/4e-4": ("outcome", dict(OFFPOLICY["outcome, gspo"][1], eps_low=3e-4,
                                                                  eps_high=4e-4)),
            "outcome, luspo, clip 3e-4/4e-4": ("outcome", dict(OFFPOLICY["outcome, luspo"][1], eps_low=3e-4,
                                                                   eps_high=4e-4))}
# Credit per step (issue 35, item 2): process supervision as DeepSeekMath does it in GRPO (arXiv 2402.03300, 4.1.3):
# every step judged as arithmetic for its column, and the answer by whether the steps spell it
# (traces.step_verdicts), each verdict normalised over the group's steps, each token credited with the steps it leads
# into (grpo.process_advantages). Alone (the record's reward is the share of valid verdicts), and added to the
# outcome's advantage. Per token, the steps' advantages are about 2.4 times the outcome's in size (mean |A| over a
# batch of the trace model's completions: 1.21-1.61 against 0.35-0.84), so the outcome reward also runs at 2.5 times
# the learning rate: a control for "it only moved faster".
STEPS = {"outcome": ("outcome", {}),
         "steps": ("valid steps", {}, {"steps_fn": "step_verdicts", "outcome_weight": 0.0}),
         "outcome + steps": ("outcome", {}, {"steps_fn": "step_verdicts", "outcome_weight": 1.0}),
         "outcome, lr 2.5e-4": ("outcome", {"lr": 2.5e-4}),
         # the sequence-level controls (issue 57): the same step verdicts, but as one number a completion (the share
         # valid) with GRPO's ordinary advantage, so what separates them from the per-step arms is the credit per
         # step, not the information in the verdicts
         "steps, one reward a completion": ("valid steps", {}),
         "outcome + steps, one reward a completion": ("outcome + valid steps", {})}
# A free length (issue 35, item 3): the check model (data/check_model), pre-trained on the same noisy traces, half of
# them with a check pass (the working written twice, scratchpad.with_check), so a right trace can be about twice as
# long as it needs and the outcome reward pays the same. What each aggregation does to length when length is free:
# Dr. GRPO (arXiv 2503.20783) says dividing by a sequence's own length (grpo) favours short right answers and long
# wrong ones; LUSPO (arXiv 2602.05261) says GSPO's sequence-level objective pushes outputs shorter. 100 steps, a cap
# that fits the longest right trace with its check pass (4 columns: 78 tokens), the lab's config otherwise.
FREE_CONFIG = dict(LAB_CONFIG, steps=100, max_new_tokens=96, eval_every=20)
# dapo is left out: on-policy it is dr_grpo with a per-batch scale (every token weighs alike in both); GSPO and LUSPO
# run off-policy (4 updates a batch) at GSPO's clip range, where the part 'sequence-clip' found them learning.
FREE = {"outcome": ("outcome", {}), "outcome, dr_grpo": ("outcome", {"loss_type": "dr_grpo"}),
        "outcome, gspo, 4 updates": SEQ_CLIP["outcome, gspo, clip 3e-4/4e-4"],
        "outcome, luspo, 4 updates": SEQ_CLIP["outcome, luspo, clip 3e-4/4e-4"]}
KEEP = ("reward_mean", "clip_frac", "completion_len", "completion_len_right", "completion_len_wrong", "truncated_frac",
        "entropy", "group_reward_std", "heldout_pass@1")


def reward_fn(name):
    from utils.verifiers import traces
    if name == "shaped":
        return traces.shaped_reward()
    if name == "length-biased":
        return traces.length_biased_reward(0.1)
    if name == "rubric":
        return traces.rubric()
    if name == "outcome + valid steps":
        def outcome_plus_steps(completions, answer=None, **kw):
            return [o + v for o, v in zip(traces.outcome_reward(completions, answer, **kw),
                                          traces.valid_steps_reward(completions, answer, **kw))]
        return outcome_plus_steps
    return {"outcome": traces.outcome_reward, "process": traces.process_reward,
            "arithmetic": traces.arithmetic_reward, "valid steps": traces.valid_steps_reward}[name]


def sparse_train():
    """SPARSE_TRAIN fresh 5-digit problems (a Dataset like the splits), none of them in the ood split."""
    from datasets import Dataset

    from utils.tasks import scratchpad
    ood = set(scratchpad.load_split("ood")["prompt"])
    return Dataset.from_list(scratchpad.fresh_problems(SPARSE_TRAIN, 5, SPARSE_TRAIN_SEED, exclude=ood))


def run(condition, table, config, eval_k, seed, steps, train=None, test=None, model=None):
    from utils.models.policy import TRACE, load_policy
    from utils.rl.grpo import GRPOConfig
    from utils.runs.traces import train_on_traces
    from utils.tasks import scratchpad

    setup(seed, quiet=True)
    base, tok = load_policy(model or TRACE)
    from utils.verifiers import traces

    reward, changes, credit = (*table[condition], {})[:3]  # credit: per-step credit (STEPS)
    cfg = GRPOConfig(**dict(config, **changes, steps=steps, seed=seed))
    per_step = {"steps_fn": getattr(traces, credit["steps_fn"]), "outcome_weight": credit["outcome_weight"]} \
        if credit else {}
    r = train_on_traces(base, tok, reward_fn(reward), cfg, train or scratchpad.load_split("train"),
                        test or scratchpad.load_split("test"), eval_k=eval_k, progress=False, **per_step)
    return {"condition": condition, "reward": reward, "changes": changes, "credit": credit, "seed": seed,
            "steps": steps,
            "seconds": round(r["seconds"], 1),
            "heldout_curve": [(h["step"], h["heldout_pass@1"]) for h in r["history"]
                              if h["heldout_pass@1"] is not None],
            "history": [{k: h.get(k) for k in ("step",) + KEEP} for h in r["history"]], "final": r["final"]}


BEST_OF_N = 8


def best_of_n_part(seeds):
    """The process judge used as Lightman et al. used theirs (arXiv 2305.20050): no training; the trace model
    samples BEST_OF_N completions of each of the 600 test problems (seeded), and one is chosen per problem by
    majority vote or by the step verdicts (utils.eval.traces.best_of_n)."""
    from utils.eval.traces import best_of_n
    from utils.models.policy import TRACE, load_policy
    from utils.tasks import scratchpad

    setup(0, quiet=True)
    model, tok = load_policy(TRACE)
    runs = []
    for seed in seeds:
        runs.append({"seed": seed, **best_of_n(model, tok, scratchpad.load_split("test"), n=BEST_OF_N, seed=seed)})
        print(f"seed {seed}: " + "  ".join(f"{k} {v:.3f}" for k, v in runs[-1].items() if isinstance(v, float)),
              flush=True)
    path = os.path.join(ROOT, "benchmarks", "results", "lab06.json")
    out = json.load(open(path)) if os.path.exists(path) else {}
    out["best-of-n"] = {"environment": environment(), "n": BEST_OF_N, "split": "test", "seeds": seeds, "runs": runs}
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("lab", "long", "length", "sparse", "objectives", "objectives-long",
                                       "objectives-offpolicy", "sequence-clip", "steps", "best-of-n",
                                       "free-length"), default="lab")
    args = run_options(ap).parse_args()
    from utils.eval.traces import trace_metrics
    from utils.models.policy import CHECK, TRACE, load_policy
    from utils.tasks import scratchpad

    if args.part == "best-of-n":
        return best_of_n_part(args.seeds)
    config, table, eval_k = {"lab": (LAB_CONFIG, LAB_CONDITIONS, LAB_EVAL_K),
                             "length": (LAB_CONFIG, LENGTH_CONDITIONS, LAB_EVAL_K),
                             "sparse": (LAB_CONFIG, SPARSE_CONDITIONS, LAB_EVAL_K),
                             "long": (LONG_CONFIG, LONG_CONDITIONS, LONG_EVAL_K),
                             "objectives": (LAB_CONFIG, OBJECTIVES, LAB_EVAL_K),
                             "objectives-long": (LONG_CONFIG, OBJECTIVES, LONG_EVAL_K),
                             "objectives-offpolicy": (LAB_CONFIG, OFFPOLICY, LAB_EVAL_K),
                             "sequence-clip": (LAB_CONFIG, SEQ_CLIP, LAB_EVAL_K),
                             "steps": (LAB_CONFIG, STEPS, LAB_EVAL_K),
                             "free-length": (FREE_CONFIG, FREE, LAB_EVAL_K)}[args.part]
    steps = args.steps or config["steps"]
    conditions = args.conditions or list(table)
    setup(0, quiet=True)
    train, test = (sparse_train(), scratchpad.load_split("ood")) if args.part == "sparse" else (None, None)
    model = CHECK if args.part == "free-length" else TRACE
    base = trace_metrics(*load_policy(model), test or scratchpad.load_split("test"), k=eval_k,
                         max_new_tokens=config["max_new_tokens"])
    jobs = [(c, table, config, eval_k, seed, steps, train, test, model) for c in conditions for seed in args.seeds]
    done = run_all(run, jobs, args.jobs, args.threads)
    runs = []
    for i, job in enumerate(jobs):
        c, seed = job[0], job[4]
        runs.append(done[i])
        f = runs[-1]["final"]
        print(f"{c:18s} seed {seed}: pass@1 {f['pass@1']:.3f}  CoT {f['cot_pass@1']:.3f}  steps exact "
              f"{f['steps_exact']:.3f}  arithmetic {f['arithmetic_score']:.3f}  length {f['length']:.1f} "
              f"(right {f['length_right'] or 0:.1f}, wrong {f['length_wrong'] or 0:.1f})  truncated "
              f"{f['truncated']:.3f}  extra steps {f['extra_steps']:.2f}  checked {f['checked']:.3f} "
              f"(right {f['checked_right'] or 0:.2f}, wrong {f['checked_wrong'] or 0:.2f})  "
              f"({runs[-1]['seconds']:.0f} s)",
              flush=True)
    print("\nbase model: " + "  ".join(f"{k} {v:.3f}" for k, v in base.items() if isinstance(v, float)))
    for c in conditions:
        fs = [r["final"] for r in runs if r["condition"] == c]
        print(f"{c:18s} " + "  ".join(f"{k} {min(f[k] for f in fs):.3f}-{max(f[k] for f in fs):.3f}"
                                      for k in ("pass@1", "cot_pass@1", "steps_exact", "length")))
    if args.add and args.conditions and args.steps in (None, config["steps"]) and args.seeds == [0, 1, 2]:
        add_runs("lab06", args.part, runs, environment())
        return
    if args.steps not in (None, config["steps"]) or args.conditions:
        print("(a partial run: not written to the results)")
        return
    path = os.path.join(ROOT, "benchmarks", "results", "lab06.json")
    out = json.load(open(path)) if os.path.exists(path) else {}
    out[args.part] = {"environment": environment(), "config": config, "eval_k": eval_k, "seeds": args.seeds,
                      "base": base, "runs": runs} | ({"model": model} if model != TRACE else {})
    if args.jobs > 1:  # the environment's torch_threads is the parent's; each run had --threads
        out[args.part] |= {"jobs": args.jobs, "threads_per_run": args.threads}
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()

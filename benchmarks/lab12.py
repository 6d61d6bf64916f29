"""Lab 12's multi-seed study: rewards with no verifier, the policy's own majority vote as the label.
Usage:

    python benchmarks/lab12.py --part labels --jobs 2 --threads 1     # four rewards, 200 steps, seeds 0-2
    python benchmarks/lab12.py --part proposer --jobs 2 --threads 1   # who writes the problems: seven arms
    python benchmarks/lab12.py --part selfplay --jobs 2 --threads 1   # the proposer with majority labels, gated

labels (issue 62, item 2): Lab 01's recipe (the shipped base model, the arithmetic task's train split, batch 256 in
groups of 8, lr 1e-4, beta 0) for CONFIG["steps"] steps under each reward of LABEL_PARTS:
  strict          the strict verifier against the true answers (grounded labels: the control)
  majority vote   utils.verifiers.label_free.majority_vote_reward: each group's majority answer is the label (TTRL,
                  arXiv 2504.16084); the true answers are never read
  majority + gold the same, but the prompts whose index in the train split is a multiple of 8 (1 in 8) are paid
                  by the strict verifier: a small budget of gold labels
  random          Lab 03's coin (utils.verifiers.spurious.random_reward), its rate matched to the majority vote's
                  pay rate on the base model (the share of samples that agree with their group's label)
After the first runs (2026-11-29), a fifth arm, its five lines written before it ran:
  claim     a confidence gate keeps the majority vote from collapsing: paid only where at least half the group
            agrees (majority_vote_reward's min_share 0.5; still label-free), the truth at step 200 stays above the
            plain vote's, and it rises above its start at first (where half agree, the base's label is mostly right)
  control   the plain majority vote (rerun beside it, recording what the policy writes at the end: top_answers)
  changes   the gated arm's truth at step 200 not above the plain vote's on every seed, or never 0.03 above its
            start
After a researcher's review, six more arms, the third five lines written before they ran:
  claim     the label-free collapse is the step size's as much as the labels': at lr 1e-5 (where Lab 03's coin is
            near-neutral) the vote does not collapse in 200 steps (truth at step 200 above half its start) and ends
            at or above the random reward; trained only on prompts whose base majority is right (an oracle filter, a
            diagnostic), the vote at lr 1e-4 raises the truth 0.03 above its start; the votes add to a gold budget
            (gold + vote above gold only, strict on the same 1 prompt in 8 and nothing elsewhere)
  control   the same arms at lr 1e-4 (stored); strict at lr 1e-5; gold only
  matched   recipe but the learning rate, prompts (the filtered set for the diagnostic), seeds, evaluation
  changes   at lr 1e-5 the vote's truth at step 200 below the random reward's on every seed, or below half its start
            on every seed; the filtered vote never 0.03 above its start; gold + vote not above gold only on every
            seed (then the votes do not help the gold labels)
Added while writing the lab (2026-11-29), the fourth five lines, written before it ran (REVIEWING.md: run the key arm
without std scaling before explaining a collapse):
  claim     the vote's collapse at lr 1e-4 is not per-group std scaling's doing: its rewards are 0 or 1, so the
            scaling multiplies a group's advantages by 2 to 2.8 (not by the tens it gives a judge's near-ties); without
            it the vote still collapses within 200 steps (truth below half its start on every seed)
  control   the vote at lr 1e-4 with the scaling (stored), and at lr 1e-5 (stored)
  matched   recipe (but scale_std=False), prompts, seeds, probe
  changes   no collapse on any seed: then the scaling was the driver and the lab says so; a collapse on some seeds
            only: the lab says the scaling speeds it
After the lab's review (2026-11-29), the fifth five lines, written before it ran:
  claim     the +0.012 to +0.026 of gold + vote over the vote alone at lr 1e-5 says the gold labels add to the votes;
            whether the votes add to the gold labels needs gold only at lr 1e-5: gold + vote above it on every seed
  control   gold only, lr 1e-5 (the same 1 prompt in 8 paid by the verifier, nothing elsewhere)
  matched   recipe at lr 1e-5, prompts, seeds, probe
  changes   gold + vote not above gold only on every seed: the lab says the votes did not add to the gold labels
Every 20 steps (and at step 0), on PROBE_N test prompts with K samples each (seeded as the run): the truth
(mean strict pass@1), agreement (the share of samples that give their prompt's majority label; 0 where there is
none), the share of prompts with no label (a tie), and the label's accuracy (the share of prompts whose majority
label is the true answer), overall and by the base model's difficulty of the prompt (its right samples of K at
step 0: hard 0, mid 1-3, easy 4-8), and the policy's mean token entropy on those samples.

Five lines (REVIEWING.md), written before it ran:
  claim     the majority label teaches the truth where the base model's majority is right and the wrong answer
            where it is not: the truth rises at first (toward the base model's majority accuracy), then stops or
            falls while agreement climbs towards 1 (a collapse onto its own answers); the grounded reward keeps
            rising; a gold label on 1 prompt in 8 keeps the truth up; the random reward moves little (Lab 03)
  control   the strict reward (grounded labels) and the rate-matched random reward, on the same recipe and seeds
  baseline  the base model's pass@1 and majority accuracy on the same probe prompts (step 0)
  matched   recipe, prompts, seeds, steps and evaluation; every arm samples the same completions a step
  changes   majority vote at step 200 at or above strict on every seed (then the missing labels cost nothing
            here), or never 0.03 above its start (it taught nothing); majority + gold not above majority vote at step
            200 on every seed (then the gold budget does not hold it)

proposer (issue 62, item 1): the same recipe, its prompts chosen by each arm of PROPOSER_PARTS from a pool of
POOL_N problems of each of the 18 kinds of utils.tasks.arithmetic.KINDS (digits of a and of b from 1 to 3, + or
-; none a test, valid or ood prompt, none an evaluation prompt):
  seed set        the train split alone (Lab 01: operands 0-99), a human's set of problems
  uniform kinds   every kind equally often (utils.rl.proposer.ProposerRollout with lr 0)
  curriculum      Lab 07's sweet spot: only the kinds whose base-model pass rate is in [0.3, 0.7] (fixed at start)
  proposer        a Proposer (18 logits) paid AZR's learnability (1 - p for a group pass rate 0 < p < 1, else 0;
                  arXiv 2505.03335) after every step, lr PROPOSER_LR
  proposer + seed half of each step's prompts from the train split, half the proposer's (an anchor)
Every 50 steps and at step 0: pass@1 (4 samples) on EVAL_N held-out problems of each kind, read by length class
(LENGTHS: both operands of 1-2 digits; one of 3; both of 3); every step: the proposer's kind probabilities (stored
every 10 steps), its learnability paid, and the share of groups with no spread.

Five lines, written before it ran:
  claim     a proposer paid for learnability moves its problems to the kinds where the solver's groups split,
            so fewer of its groups have no spread than under uniform kinds, and it trains a solver at least as
            good as uniform kinds at equal compute; on lengths it stops proposing it gains less (self-play papers:
            AZR arXiv 2505.03335, R-Zero arXiv 2508.05004, report gains over training on a fixed seed set)
  control   uniform kinds (the same grammar and pool); Lab 07's fixed curriculum; the seed set alone
  baseline  the base model on each length class (step 0)
  matched   recipe (batch 256 in groups of 8, lr 1e-4, 200 steps), completions sampled a step, evaluation, seeds
  changes   the proposer's share of groups with no spread not below uniform's on every seed; or its mean pass@1
            over the three length classes at step 200 not above uniform's on every seed (learnability did not buy
            accuracy here)
  second five lines (after a researcher's review, before they ran): R-Zero's reward (1 - 2|p - 1/2|) and AZR's
            at lr 0.3 against AZR's at lr 1.0: each keeps more kinds in play (the proposer's entropy at step 200
            above the lr-1.0 arm's on every seed); changes: not above on every seed
  rerun (2026-11-29, before running again; the five lines unchanged): the first run's pool held 300 problems a
            kind; its proposer settled on one kind (2-2 digits, 78-91% of its draws) and so trained on those 300
            problems about 18 times each, while the seed set holds 6,000. The pool now holds up to 3,000 a kind.

After the lab's review, the proposer's third five lines, written before it ran:
  claim     Absolute Zero's proposer went to 2-2 digits because the solver learned 2+2 (1 - p pays less for it as p
            rises): against a solver that does not learn (lr FROZEN_LR, the same pool and groups), it settles
            elsewhere: its largest kind at step 200 is not 2-2 digits on every seed (utils.rl.proposer's
            fixed_solver_run, on the base model's per-problem rates, predicts 2+2)
  control   the stored proposer with a learning solver (lr 1e-4)
  matched   pool, proposer lr, reward, batch, seeds
  changes   2-2 digits its largest kind on some seed: then the move to 2-2 is not (only) the solver's learning, and
            the lab says the proposer chose 2-2 from the start

selfplay (issue 62, item 3): the proposer part's recipe at lr 1e-5, the problems' rewards from Python (the strict
verifier) or from the solver's majority vote (majority_vote_reward), and a band gate (ProposerRollout's band: a
group whose pass rate, here its agreement with its own label, is outside [0.25, 0.75] trains nothing). Five lines,
written before it ran:
  claim     with majority labels in place of Python's, the proposer's problems teach less: test-split pass@1 at step
            200 below the Python-labelled proposer's on every seed; the band gate keeps it nearer (above the ungated
            on every seed)
  control   the Python-labelled proposer; uniform kinds with majority labels
  baseline  the base model (step 0)
  matched   lr 1e-5, 200 steps, recipe, pool, evaluation, seeds
  changes   the majority-labelled proposer not below the Python-labelled one on every seed; the gated one not above
            the ungated one on every seed
  second five lines (after the lab's review, before it ran): uniform kinds with Python's labels at lr 1e-5, beside
            uniform kinds with majority labels (stored): who checks, at the same mix. claim: Python's labels above
            the vote's on every seed at uniform kinds too, by less than between the two proposers (0.116-0.150);
            changes: not above on every seed (then at an equal mix the vote costs nothing here), or by as much as
            between the proposers (then the mix explains none of that gap)

Writes benchmarks/results/lab12.json (one entry per part) and prints a table.
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import run_all, run_options, store_runs  # noqa: E402
from utils.setup import setup  # noqa: E402

CONFIG = dict(steps=200, batch_size=256, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=8, eps_low=0.2,
              eps_high=0.2, beta=0.0, eval_every=20, eval_n=500, seed=0, track_kl=False)
PROBE_N, K = 300, 8          # the probe: test prompts, samples each
GOLD_EVERY = 8               # majority + gold: the train prompts whose index is a multiple of this are gold
LABEL_PARTS = {"strict": "strict", "majority vote": "majority", "majority vote, gold on 1 prompt in 8": "gold",
               "random reward (rate-matched)": "random",
               # added after the first runs (its five lines below): a confidence gate, label-free
               "majority vote, only where half agree": "gated",
               # added after a researcher's review (the third five lines below)
               "strict, lr 1e-5": "strict", "majority vote, lr 1e-5": "majority",
               "random reward (rate-matched), lr 1e-5": "random",
               "majority vote, gold on 1 prompt in 8, lr 1e-5": "gold",
               "gold only (strict on 1 prompt in 8, nothing elsewhere)": "gold_only",
               # added after the lab's review (the fifth five lines below)
               "gold only, lr 1e-5": "gold_only",
               "majority vote on prompts whose base majority is right": "easy",
               # added while writing the lab (the fourth five lines below)
               "majority vote, no std scaling": "majority"}


def probe(policy, tok, prompts, answers, seed, base_right=None):
    """The label-free measures of one policy on the probe prompts (utils.eval.labels.label_probe, K samples each,
    binned by the base model's right samples of the same probe at step 0)."""
    from utils.eval.labels import label_probe

    return label_probe(policy, tok, prompts, answers, k=K, seed=seed, difficulty=base_right)


def base_pay_rate(base, tok, train, seed=0, n=500):
    """The majority vote's pay rate on the base model: the mean reward of K samples of n train prompts."""
    import torch

    from utils.models.policy import sample
    from utils.verifiers.label_free import majority_vote_reward
    prompts = list(train["prompt"][:n])
    texts = sample(base, tok, prompts, k=K, generator=torch.Generator().manual_seed(seed)).texts
    return float(np.mean(majority_vote_reward(texts, problem=[p for p in prompts for _ in range(K)])))


def labels_run(condition, seed, steps):
    import copy
    from collections import Counter

    import torch

    from utils.models.policy import load_policy, sample
    from utils.rl.grpo import GRPOConfig
    from utils.rl.loop import train_grpo
    from utils.rl.rollout import GroupRollout
    from utils.tasks.arithmetic import load_split
    from utils.verifiers.arithmetic import strict_reward
    from utils.verifiers.label_free import majority_vote_reward
    from utils.verifiers.spurious import random_reward

    setup(seed=seed, quiet=True)
    base, tok = load_policy()
    policy = copy.deepcopy(base)
    train, test = load_split("train"), load_split("test")
    pp, pa = list(test["prompt"][:PROBE_N]), list(test["answer"][:PROBE_N])
    kind = LABEL_PARTS[condition]
    lr = 1e-5 if condition.endswith("lr 1e-5") else CONFIG["lr"]
    if kind == "easy":   # an oracle filter (a diagnostic, not a method): the train prompts whose base majority of 8
        # samples (their own seed, 99) is the true answer
        from utils.eval.metrics import evaluate
        from utils.verifiers.label_free import majority_label

        ev = evaluate(base, tok, list(train["prompt"]), list(train["answer"]), k=K, seed=99)
        keep = [i for i, a in enumerate(train["answer"])
                if majority_label(ev["texts"][i * K:(i + 1) * K]) == int(a)]
        train = {key: [train[key][i] for i in keep] for key in ("prompt", "answer")}
    columns = {"problem": list(train["prompt"])}
    p_random = None
    if kind == "strict":
        reward = strict_reward
    elif kind == "random":
        p_random = base_pay_rate(base, tok, train)
        reward = random_reward(p_random, seed=seed)
    elif kind == "gated":
        def reward(completions, answer=None, **kw):   # the majority's label only where >= half the group agrees
            return majority_vote_reward(completions, answer, min_share=0.5, **kw)
    elif kind == "gold_only":
        gold = [i % GOLD_EVERY == 0 for i in range(len(train["prompt"]))]
        columns["gold"] = gold

        def reward(completions, answer=None, gold=None, **kw):   # the gold prompts' strict verdicts, 0 elsewhere
            return [s if g else 0.0 for s, g in zip(strict_reward(completions, answer), gold)]
    else:
        reward = majority_vote_reward
        if kind == "gold":
            columns["gold"] = [i % GOLD_EVERY == 0 for i in range(len(train["prompt"]))]
    start, base_right = probe(base, tok, pp, pa, seed=4242)
    reports = [dict(step=0, **start)]

    def callback(pol, record):
        if record["step"] % CONFIG["eval_every"] == 0 or record["step"] == steps:
            reports.append(dict(step=record["step"], **probe(pol, tok, pp, pa, 4242, base_right)[0]))

    cfg = GRPOConfig(**dict(CONFIG, seed=seed, steps=steps, lr=lr, scale_std="no std scaling" not in condition))
    t = time.time()
    hist = train_grpo(policy, tok, train["prompt"], train["answer"], reward, cfg, test["prompt"], test["answer"],
                      progress=False, callback=callback, rollout=GroupRollout(columns=columns))
    texts = sample(policy, tok, pp[:100], k=K, generator=torch.Generator().manual_seed(7)).texts   # what it writes
    top = Counter(t.strip() for t in texts).most_common(5)
    return {"condition": condition, "seed": seed, "steps": len(hist), "seconds": time.time() - t, "lr": lr,
            "train_prompts": len(train["prompt"]),
            "top_answers": [(a, n / len(texts)) for a, n in top], "distinct_answers": len(set(texts)) / len(texts),
            "p_random": p_random, "final": hist[-1]["heldout_pass@1"],
            "curve": [(r["step"], r["heldout_pass@1"]) for r in hist if r["heldout_pass@1"] is not None],
            "probe": reports, "reward_mean": [r["reward_mean"] for r in hist],
            "zero_spread_frac": [r.get("zero_spread_frac") for r in hist]}


# ------------------------------------------------------------------------------------------ the proposer part

# the pool is large enough that a proposer that settles on one kind still meets fresh problems (a proposer writes
# new ones): the first run's 300 a kind let it repeat one kind's 300 problems 18 times over (found reading that run: its
# data, not its choices, limited it); the smallest kinds hold fewer (1+1 digits: about 60 after the held-out ones)
POOL_N, EVAL_N, POOL_SEED, EVAL_SEED = 3000, 40, 1212, 3434
PROPOSER_LR = 1.0            # fixed before the runs
SWEET = (0.3, 0.7)           # Lab 07's band
FROZEN_LR = 1e-30            # "frozen solver": a learning rate at which AdamW's steps do not move a float32 weight
PROPOSER_PARTS = {"seed set (train split)": "seed", "uniform kinds": "uniform", "curriculum (sweet-spot kinds)":
                  "curriculum", "proposer (learnability)": "proposer", "proposer + seed set (half each)": "anchored",
                  # added after a researcher's review (the proposer's second five lines)
                  "proposer (R-Zero's reward)": "proposer", "proposer (lr 0.3)": "proposer",
                  # added after the lab's review (the proposer's third five lines): the solver does not learn
                  "proposer, frozen solver": "proposer"}
LENGTHS = {"1-2 digits": lambda k: max(k[0], k[1]) <= 2, "one 3-digit operand": lambda k: (k[0] == 3) != (k[1] == 3),
           "3+3 digits": lambda k: k[0] == 3 and k[1] == 3}


def kind_sets():
    """(pool rows with their kind index, eval rows with their kind index): utils.tasks.arithmetic.kind_sets with this
    benchmark's sizes and seeds (disjoint; no test, valid or ood prompt in either, no train prompt among the eval
    rows)."""
    from utils.tasks.arithmetic import kind_sets

    return kind_sets(POOL_N, EVAL_N, POOL_SEED, EVAL_SEED)


def by_length(policy, tok, evals, seed=4242):
    """pass@1 (4 samples) on each kind's evaluation rows, and its mean over each length class's kinds."""
    from utils.eval.metrics import evaluate
    from utils.tasks.arithmetic import KINDS

    ev = evaluate(policy, tok, [r["prompt"] for r in evals], [r["answer"] for r in evals], k=4, seed=seed)
    right = np.asarray(ev["correct"]) / 4.0
    kinds = np.array([r["kind"] for r in evals])
    per_kind = [float(right[kinds == k].mean()) for k in range(len(KINDS))]
    return {"per_kind": per_kind, **{name: float(np.mean([per_kind[k] for k, kind in enumerate(KINDS) if f(kind)]))
                                     for name, f in LENGTHS.items()}}


def proposer_run(condition, seed, steps):
    import copy

    from utils.models.policy import load_policy
    from utils.rl.grpo import GRPOConfig
    from utils.rl.loop import train_grpo
    from utils.rl.proposer import Proposer, ProposerRollout
    from utils.rl.rollout import GroupRollout
    from utils.tasks.arithmetic import KINDS, load_split
    from utils.tasks.curation import sweet_spot
    from utils.verifiers.arithmetic import strict_reward

    setup(seed=seed, quiet=True)
    base, tok = load_policy()
    policy = copy.deepcopy(base)
    train, test = load_split("train"), load_split("test")
    pool, evals = kind_sets()
    kind_of = {(a, b, op): k for k, (a, b, op) in enumerate(KINDS)}
    digits = lambda x: len(str(abs(x))) if x >= 10 else 1  # noqa: E731
    train_rows = [{"prompt": p, "answer": a, "kind": kind_of[(digits(x), digits(y), o)]}
                  for p, a, x, y, o in zip(train["prompt"], train["answer"], train["a"], train["b"], train["op"])]
    start = by_length(base, tok, evals)
    spec = SELFPLAY_PARTS.get(condition, {})
    arm = PROPOSER_PARTS.get(condition) or spec["arm"]
    base_rates = start["per_kind"]
    proposer, rollout, rows = None, None, pool
    if arm == "seed":
        rows, rollout = train_rows, GroupRollout()
    else:
        logits = None
        if arm == "curriculum":
            keep = sweet_spot(base_rates, *SWEET)
            logits = np.full(len(KINDS), -1e9)
            logits[keep] = 0.0
        rows = pool + (train_rows if arm == "anchored" else [])
        lr = 0.3 if condition.endswith("(lr 0.3)") else PROPOSER_LR
        proposer = Proposer(lr=lr if arm in ("proposer", "anchored") else 0.0, logits=logits)
        rollout = ProposerRollout(proposer=proposer, kinds=[r["kind"] for r in rows],
                                  reward="rzero" if "R-Zero" in condition else "azr",
                                  anchor=0.5 if arm == "anchored" else 0.0,
                                  anchor_idx=list(range(len(pool), len(rows))) if arm == "anchored" else None,
                                  band=spec.get("band"), columns={"problem": [r["prompt"] for r in rows]})
    reward = strict_reward
    if spec.get("labels") == "majority":
        from utils.verifiers.label_free import majority_vote_reward as reward
    reports = [dict(step=0, **start)]

    def callback(pol, record):
        if record["step"] % 50 == 0 or record["step"] == steps:
            reports.append(dict(step=record["step"], **by_length(pol, tok, evals)))

    lr = FROZEN_LR if condition.endswith("frozen solver") else spec.get("lr", CONFIG["lr"])
    cfg = GRPOConfig(**dict(CONFIG, seed=seed, steps=steps, lr=lr))
    t = time.time()
    hist = train_grpo(policy, tok, [r["prompt"] for r in rows], [r["answer"] for r in rows], reward, cfg,
                      test["prompt"], test["answer"], progress=False, callback=callback, rollout=rollout)
    out = {"condition": condition, "seed": seed, "steps": len(hist), "seconds": time.time() - t,
           "final": hist[-1]["heldout_pass@1"], "pool": len(rows),
           "curve": [(r["step"], r["heldout_pass@1"]) for r in hist if r["heldout_pass@1"] is not None],
           "by_length": reports, "zero_spread_frac": [r.get("zero_spread_frac") for r in hist],
           "reward_mean": [r["reward_mean"] for r in hist]}
    if proposer is not None:
        h = rollout.history
        out |= {"probs": [(i + 1, h[i]["probs"]) for i in range(len(h)) if (i + 1) % 10 == 0 or i == 0],
                "learnability": [x["learnability"] for x in h], "proposer_zero_spread": [x["zero_spread"] for x in h],
                "kinds_in_band": None if arm != "curriculum" else [int(k) for k in np.flatnonzero(logits == 0)],
                "gated": [x["gated"] for x in h]}
    return out


# the two together (issue 62, item 3): who writes the problems and who checks the answers, at lr 1e-5 (where the
# majority vote learned in the labels part); a band gate on the group's pass rate (R-Zero's filter)
SELFPLAY_PARTS = {
    "proposer, Python's labels": dict(arm="proposer", labels="python", lr=1e-5),
    "proposer, majority labels": dict(arm="proposer", labels="majority", lr=1e-5),
    "proposer, majority labels, band 0.25-0.75": dict(arm="proposer", labels="majority", lr=1e-5, band=(0.25, 0.75)),
    "uniform kinds, majority labels": dict(arm="uniform", labels="majority", lr=1e-5),
    # added after the lab's review (the selfplay part's second five lines): who checks, at the same mix
    "uniform kinds, Python's labels": dict(arm="uniform", labels="python", lr=1e-5)}

PARTS = {"labels": (LABEL_PARTS, labels_run, CONFIG), "proposer": (PROPOSER_PARTS, proposer_run, CONFIG),
         "selfplay": (SELFPLAY_PARTS, proposer_run, CONFIG)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=tuple(PARTS), default="labels")
    args = run_options(ap).parse_args()
    from utils.eval.labels import BINS

    conds, fn, config = PARTS[args.part]
    args.steps = args.steps or config["steps"]
    jobs = [(c, s, args.steps) for c in conds if not args.conditions or c in args.conditions for s in args.seeds]
    runs = run_all(fn, jobs, args.jobs, args.threads)
    for r in runs:
        if args.part in ("proposer", "selfplay"):
            bl = r["by_length"]
            print(f"{r['condition']:34s} seed {r['seed']}: held-out {r['final']:.3f}  "
                  + "  ".join(f"{name} {bl[0][name]:.3f}->{bl[-1][name]:.3f}" for name in LENGTHS)
                  + f"  no spread {np.mean(r['zero_spread_frac'][-20:]):.2f}  run {r['seconds']:.0f} s", flush=True)
            continue
        pr = r["probe"]
        print(f"{r['condition']:40s} seed {r['seed']}: held-out {r['final']:.3f}  probe truth "
              + " ".join(f"{x['truth']:.2f}" for x in pr) + "  agreement "
              + " ".join(f"{x['agreement']:.2f}" for x in pr) + "  label acc "
              + " ".join(f"{x['label_acc']:.2f}" for x in pr) + f"  run {r['seconds']:.0f} s", flush=True)
    extra = {"labels": {"probe_n": PROBE_N, "k": K, "gold_every": GOLD_EVERY, "bins": BINS},
             "proposer": {"pool_n": POOL_N, "eval_n": EVAL_N, "proposer_lr": PROPOSER_LR, "sweet": SWEET,
                          "lengths": list(LENGTHS)},
             "selfplay": {"pool_n": POOL_N, "eval_n": EVAL_N, "proposer_lr": PROPOSER_LR,
                          "lengths": list(LENGTHS)}}[args.part]
    store_runs("lab12", args, config, runs, extra)


if __name__ == "__main__":
    main()

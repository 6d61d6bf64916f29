"""What a policy's own majority vote would label (Lab 12): the measures of a label-free reward, read beside the truth.

    label_probe(policy, tok, prompts, answers)   k samples of each prompt, their majority label
                                                 (utils.verifiers.label_free.majority_label), and:
        truth       strict pass@1 of the samples
        agreement   the share of samples that give their prompt's majority label (0 where there is none)
        no_label    the share of prompts with no label (a tie, or no readable answer)
        label_acc   the share of prompts whose label is the true answer (a tie counts as no label, so wrong)
        maj_acc     maj@k with ties broken at random: the expected share of prompts whose most-voted answer is
                    the true one (a tie among m answers that holds it: 1/m)
        entropy     the policy's mean token entropy over the samples (nats)
        label_acc_by_bin, truth_by_bin   the same two by difficulty: `difficulty` right samples of k per prompt
                    (BINS: hard 0, mid 1-3, easy 4-8); None: this probe's own samples, so the bins are the vote's
                    own samples and label accuracy by bin holds partly by construction (pass another draw's
                    counts to measure it)

Returns (the measures, the right samples per prompt [P]), the second to pass back as `difficulty` later.
"""
from collections import Counter

import numpy as np

from utils import checks
from utils.eval.metrics import evaluate
from utils.verifiers.arithmetic import strict_answer
from utils.verifiers.label_free import majority_label

BINS = {"hard (0 of 8)": (0, 0), "mid (1-3 of 8)": (1, 3), "easy (4-8 of 8)": (4, 8)}


def label_probe(policy, tokenizer, prompts, answers, k=8, seed=0, difficulty=None, bins=BINS):
    """The label-free measures of `policy` on prompts/answers, k samples each (module docstring). difficulty: [P]
    right samples per prompt (of the same k) to bin by; None bins by this probe's own samples."""
    where = "label_probe"
    k = checks.number(where, "k", k, lo=1, hi=10_000, integer=True)
    if not isinstance(bins, dict) or not bins or not all(
            isinstance(b, (tuple, list)) and len(b) == 2 for b in bins.values()):
        raise ValueError(f"{where}: bins must be a dict {{name: (lo, hi)}} of right-sample counts, got "
                         f"{checks._short(bins)}")
    bins = {name: tuple(checks.number(where, f"bins[{name!r}]", v, lo=0) for v in b) for name, b in bins.items()}
    ev = evaluate(policy, tokenizer, prompts, answers, k=k, seed=seed, entropy=True)
    right = np.asarray(ev["correct"])                                                     # [P] right of k
    groups = [ev["texts"][i * k:(i + 1) * k] for i in range(len(prompts))]
    labels = [majority_label(g) for g in groups]
    agree = [sum(strict_answer(t) == lab for t in g) / k if lab is not None else 0.0 for g, lab in zip(groups, labels)]
    label_right = np.array([lab is not None and strict_answer(str(a)) == lab for lab, a in zip(labels, answers)])
    maj = [_tie_broken(g, strict_answer(str(a))) for g, a in zip(groups, answers)]
    if difficulty is None:
        difficulty = right
    difficulty = checks.array(where, "difficulty", difficulty, dims=1)
    if len(difficulty) != len(prompts):
        raise ValueError(f"{where}: difficulty must hold one count per prompt ({len(prompts)}), got {len(difficulty)}")
    out = {"truth": float(ev["pass@1"]), "agreement": float(np.mean(agree)),
           "no_label": float(np.mean([lab is None for lab in labels])), "label_acc": float(label_right.mean()),
           "maj_acc": float(np.mean(maj)),
           "entropy": float(ev["entropy"]), "label_acc_by_bin": {}, "truth_by_bin": {}}
    for name, (lo, hi) in bins.items():
        m = (difficulty >= lo) & (difficulty <= hi)
        out["label_acc_by_bin"][name] = float(label_right[m].mean()) if m.any() else None
        out["truth_by_bin"][name] = float(right[m].mean() / k) if m.any() else None
    return out, right.tolist()


def _tie_broken(texts, truth):
    """The chance that a vote over `texts` with ties broken at random picks `truth` (0 with no readable answer)."""
    votes = Counter(a for a in map(strict_answer, texts) if a is not None)
    if not votes:
        return 0.0
    top = max(votes.values())
    tied = [a for a, n in votes.items() if n == top]
    return (truth in tied) / len(tied)

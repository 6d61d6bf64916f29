"""Lab 06's measures on the scratchpad task: the numbers by which a trace model trained on one reward is
judged, numbers that reward does not see (the runs themselves: utils.runs.traces.train_on_traces).
benchmarks/lab06.py and the notebook share these, so the notebook's seed-0 run is one of the benchmark's.

    trace_metrics    the means of traces.judge()'s verdicts over sampled completions, and their lengths
    length_controlled  two models' pass@1 compared at equal completion length
    best_of_n        choosing one of n samples: by majority vote, or by the steps' verdicts (Lightman et al.'s use)
    min_cap          the fewest new tokens that hold the shortest right trace of some problems (+ EOS)
    check_cap        ValueError naming GRPOConfig.max_new_tokens when the cap cannot hold any right trace
    heldout_curve    a run's held-out pass@1 against completions sampled (or training seconds), from the base model
"""
import numpy as np

from utils import checks
from utils.eval.metrics import sample_in_batches
from utils.models.policy import fits
from utils.tasks.scratchpad import format_trace, steps_for
from utils.verifiers.traces import judge, parse, step_verdicts

METRICS = ("pass@1", "cot_pass@1", "steps_exact", "well_formed", "arithmetic_score", "process_score", "length",
           "length_right", "length_wrong", "truncated")


def trace_metrics(model, tokenizer, rows, k=4, seed=0, max_new_tokens=64, batch_size=400):
    """k samples (temperature 1, seeded) for each problem in `rows` (a scratchpad split: columns prompt, a, b,
    answer), each judged by traces.judge. Returns a dict of means over all samples:

    pass@1            answer right (the outcome)
    cot_pass@1        answer right and every step right (CoT-pass, arXiv 2506.14245)
    steps_exact       every step right, whatever the answer
    well_formed       the trace parses
    arithmetic_score  the share of written steps whose sum is true; process_score: judge's partial credit
    extra_steps       steps written beyond those the problem needs (padding), per sample
    checked           the share of samples with a check pass (scratchpad.with_check): the working starts again,
                      its first step written again two or more steps later (a padded step written twice sits
                      next to itself); checked_right / checked_wrong: among right / wrong answers
    length            completion tokens (EOS included when written); length_right / length_wrong: the same
                      over samples whose answer is right / wrong (None when there are none)
    truncated         the share stopped by max_new_tokens before EOS
    by_digits         {digits: {"pass@1", "length", "length_right", "length_wrong", "truncated", "checked"}} per
                      level, when `rows` has a column "digits" (it sets a right trace's length)
    by_length         {length: [samples, right answers]}: what length_controlled compares two models on
    """
    where = "trace_metrics"
    checks.model(where, "model", model)
    checks.tokenizer(where, "tokenizer", tokenizer)
    cols = rows_of(where, rows, ("prompt", "a", "b", "answer"))
    k = checks.number(where, "k", k, lo=1, hi=100_000, integer=True)
    max_new_tokens = checks.number(where, "max_new_tokens", max_new_tokens, lo=1, integer=True)
    fits(where, "rows['prompt']", model, tokenizer, cols["prompt"], max_new_tokens)
    a, b, ans = cols["a"], cols["b"], cols["answer"]
    digits = list(rows["digits"]) if "digits" in getattr(rows, "column_names", rows) else None
    out = []
    for i, ro in sample_in_batches(model, tokenizer, cols["prompt"], k=k, max_new_tokens=max_new_tokens,
                                   seed=seed, batch_size=batch_size):
        lengths = ro.completion_mask.sum(1).tolist()  # [n*k]
        for j, text in enumerate(ro.texts):
            n = i + j // k
            v = judge(text, a[n], b[n], ans[n])
            st = v["parsed"]["steps"] if v["parsed"] else []
            out.append(dict(outcome=v["outcome"], trace=v["outcome"] and v["steps_exact"], exact=v["steps_exact"],
                            wf=v["well_formed"], arith=v["arithmetic"], process=v["process"], extra=v["extra_steps"],
                            checked=bool(st) and st[0] is not None and st[0] in st[2:],
                            length=lengths[j], cut=bool(ro.truncated[j]), digits=digits[n] if digits else None))

    def mean(key, rs=out):
        return float(np.mean([r[key] for r in rs])) if rs else None
    return {"pass@1": mean("outcome"), "cot_pass@1": mean("trace"), "steps_exact": mean("exact"),
            "well_formed": mean("wf"), "arithmetic_score": mean("arith"), "process_score": mean("process"),
            "extra_steps": mean("extra"), "checked": mean("checked"),
            "checked_right": mean("checked", [r for r in out if r["outcome"]]),
            "checked_wrong": mean("checked", [r for r in out if not r["outcome"]]),
            "length": mean("length"), "length_right": mean("length", [r for r in out if r["outcome"]]),
            "length_wrong": mean("length", [r for r in out if not r["outcome"]]), "truncated": mean("cut"),
            "by_digits": {d: {"pass@1": mean("outcome", rs), "length": mean("length", rs),
                              "length_right": mean("length", [r for r in rs if r["outcome"]]),
                              "length_wrong": mean("length", [r for r in rs if not r["outcome"]]),
                              "truncated": mean("cut", rs), "checked": mean("checked", rs)}
                          for d in sorted(set(digits or [])) for rs in [[r for r in out if r["digits"] == d]]},
            "by_length": {n: [len(rs), sum(bool(r["outcome"]) for r in rs)]
                          for n in sorted({r["length"] for r in out}) for rs in [[r for r in out if r["length"] == n]]}}


def best_of_n(model, tokenizer, rows, n=8, seed=0, max_new_tokens=64, batch_size=400):
    """n samples (temperature 1, seeded) of each problem in `rows`, then one chosen per problem, and how often the
    chosen answer is right, by the rule that chose it:

    one sample     any one of the n (the mean over them: pass@1)
    majority vote  the answer most samples give (ties: the one given first), self-consistency; needs no judge
    step verdicts  the sample whose step verdicts (traces.step_verdicts: each step as arithmetic for its column, and
                   whether the steps spell the answer) are most often valid (ties: the first); reads the problem,
                   never the answer. A process judge used as Lightman et al. used theirs (arXiv 2305.20050):
                   to choose among samples, not to train
    any of n       some sample is right (pass@n): the most any rule could reach
    Returns those four shares (over problems) and n."""
    where = "best_of_n"
    checks.model(where, "model", model)
    checks.tokenizer(where, "tokenizer", tokenizer)
    cols = rows_of(where, rows, ("prompt", "a", "b", "answer"))
    n = checks.number(where, "n", n, lo=1, hi=1000, integer=True)
    max_new_tokens = checks.number(where, "max_new_tokens", max_new_tokens, lo=1, integer=True)
    fits(where, "rows['prompt']", model, tokenizer, cols["prompt"], max_new_tokens)
    texts = []
    for _, ro in sample_in_batches(model, tokenizer, cols["prompt"], k=n, max_new_tokens=max_new_tokens, seed=seed,
                                   batch_size=batch_size):
        texts.extend(ro.texts)
    out = {"one sample": [], "majority vote": [], "step verdicts": [], "any of n": []}
    for p in range(len(cols["prompt"])):
        a, b, want = cols["a"][p], cols["b"][p], str(cols["answer"][p])
        group = texts[p * n:(p + 1) * n]
        answers = [(parse(t) or {}).get("answer") for t in group]
        right = [x is not None and x == want for x in answers]
        given = [x for x in answers if x is not None]
        vote = max(given, key=lambda x: (given.count(x), -given.index(x))) if given else None
        score = [np.mean([ok for _, ok in v]) if v else 0.0 for v in (step_verdicts(t, a, b) for t in group)]
        out["one sample"].append(np.mean(right))
        out["majority vote"].append(vote == want)
        out["step verdicts"].append(right[int(np.argmax(score))])
        out["any of n"].append(any(right))
    return {k: float(np.mean(v)) for k, v in out.items()} | {"n": n}


def length_controlled(a, b):
    """Two models' pass@1 compared at equal length: within each completion length both wrote, a's pass@1 minus
    b's, averaged with the two models' samples at that length as weights (direct standardisation to the pooled
    lengths). a, b: trace_metrics results (or their "by_length", {length: [samples, right]}; keys may be strings,
    as read back from JSON). Returns {"raw": pass@1 a - b over all samples, "controlled": the same at equal
    length (None when no length is shared), "overlap": the share of all samples at a length both wrote}.
    A model that wins only by writing longer (or shorter) wins "raw" and not "controlled"; a small overlap
    says the two cannot be compared at equal length at all."""
    def bins(x, name):
        x = x.get("by_length", x) if isinstance(x, dict) else x
        bad = ValueError(f"length_controlled: {name} must be trace_metrics' result or its by_length "
                         f"{{length: [samples, right]}}, got {checks._short(x)}")
        if not isinstance(x, dict) or not x:
            raise bad
        try:
            out = {int(n): (int(c[0]), int(c[1])) for n, c in x.items()}
        except (TypeError, ValueError, IndexError, KeyError, OverflowError):
            raise bad from None
        if any(n < 0 or not 0 <= right <= samples or samples < 1 for n, (samples, right) in out.items()):
            raise bad
        return out
    A, B = bins(a, "a"), bins(b, "b")
    total = lambda d: sum(c[0] for c in d.values())  # noqa: E731
    rate = lambda d: sum(c[1] for c in d.values()) / max(total(d), 1)  # noqa: E731
    shared = sorted(set(A) & set(B))
    w = {n: A[n][0] + B[n][0] for n in shared}
    controlled = (sum(w[n] * (A[n][1] / A[n][0] - B[n][1] / B[n][0]) for n in shared) / sum(w.values())
                  if shared else None)
    return {"raw": rate(A) - rate(B), "controlled": controlled,
            "overlap": sum(w.values()) / max(total(A) + total(B), 1)}


def rows_of(where, rows, columns=("a", "b"), name="rows"):
    """rows' `columns` as lists, after checking: a split (a datasets.Dataset or a dict of columns) that has them, of
    one length, with at least one problem; a and b non-negative integers, prompt non-empty strings. ValueError
    naming the argument (`name`: rows here, train or test for a recipe) and the column otherwise."""
    names = list(rows) if isinstance(rows, dict) else getattr(rows, "column_names", None)
    if not isinstance(names, list):
        raise ValueError(f"{where}: {name} must be a split (a datasets.Dataset or a dict of columns {list(columns)}), "
                         f"got {checks._short(rows)}")
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(f"{where}: {name} lacks the column(s) {missing} (it has {names})")
    cols = {c: checks.sequence(where, f"{name}[{c!r}]", rows[c]) for c in columns}
    n = len(cols[columns[0]])
    if n == 0:
        raise ValueError(f"{where}: {name} holds no problem: it needs at least one problem")
    for c in columns:
        if len(cols[c]) != n:
            raise ValueError(f"{where}: {name}[{c!r}] has {len(cols[c])} entries and {name}[{columns[0]!r}] {n}: "
                             f"one per problem")
        if c in ("a", "b"):
            for v in cols[c]:
                checks.number(where, f"{name}[{c!r}]", v, lo=0, hi=10**18, integer=True)
    if "prompt" in cols:
        checks.strings(where, f"{name}['prompt']", cols["prompt"])
    return cols


def min_cap(tokenizer, rows):
    """The fewest new tokens that hold the shortest right trace of the problems in `rows`, EOS included:
    a smaller max_new_tokens truncates every right completion."""
    checks.tokenizer("min_cap", "tokenizer", tokenizer)
    cols = rows_of("min_cap", rows)
    shortest = min((format_trace(steps_for(int(x), int(y)), int(x) + int(y)) for x, y in zip(cols["a"], cols["b"])),
                   key=len)
    return len(tokenizer(shortest)["input_ids"]) + 1


def check_cap(max_new_tokens, tokenizer, rows):
    """Raise ValueError, naming GRPOConfig.max_new_tokens, when it cannot hold the shortest right trace of `rows`
    (every completion would be cut before its answer: reward 0, zero advantage, nothing learnt)."""
    max_new_tokens = checks.number("check_cap", "max_new_tokens", max_new_tokens, lo=1, integer=True)
    need = min_cap(tokenizer, rows)
    if max_new_tokens < need:
        raise ValueError(f"GRPOConfig.max_new_tokens={max_new_tokens} cannot hold even the shortest right trace of "
                         f"these problems ({need} tokens with EOS): every completion would be cut before its "
                         f"answer and score 0. Raise it to at least {need} (the longest right trace needs "
                         f"{max_cap(tokenizer, rows)}).")


def max_cap(tokenizer, rows):
    """The new tokens that hold the longest right trace of `rows`, EOS included."""
    checks.tokenizer("max_cap", "tokenizer", tokenizer)
    cols = rows_of("max_cap", rows)
    longest = max((format_trace(steps_for(int(x), int(y)), int(x) + int(y)) for x, y in zip(cols["a"], cols["b"])),
                  key=len)
    return len(tokenizer(longest)["input_ids"]) + 1


def heldout_curve(history, start, x="completions"):
    """(xs, pass@1s) at each held-out evaluation of a train_grpo history, starting from (0, start), the base
    model's pass@1. x: "completions" (completions sampled so far, dynamic sampling's extra rounds included) or
    "seconds" (training time so far, evaluation excluded)."""
    where = "heldout_curve"
    if not isinstance(x, str) or x not in ("completions", "seconds"):
        raise ValueError(f"{where}: x={checks._short(x)} must be 'completions' or 'seconds'")
    checks.number(where, "start", start, lo=0, hi=1)
    history = checks.sequence(where, "history", history)
    need = ("completions_sampled",) if x == "completions" else ("completions_sampled", "train_seconds")
    for i, h in enumerate(history):
        if not isinstance(h, dict) or any(k not in h for k in need):
            raise ValueError(f"{where}: history[{i}] must be a train_grpo record (a dict with {list(need)}), got "
                             f"{checks._short(h)}")
        for k in need:
            checks.number(where, f"history[{i}][{k!r}]", h[k], lo=0)
        if h.get("heldout_pass@1") is not None:
            checks.number(where, f"history[{i}]['heldout_pass@1']", h["heldout_pass@1"], lo=0, hi=1)
    pts, sampled = [(0, start)], 0
    for h in history:
        sampled += h["completions_sampled"]
        if h.get("heldout_pass@1") is not None:
            pts.append((sampled if x == "completions" else h["train_seconds"], h["heldout_pass@1"]))
    return tuple(zip(*pts))

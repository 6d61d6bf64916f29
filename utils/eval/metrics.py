"""Measuring a policy by sampling it: pass@k (unbiased), held-out accuracy, the numbers that sort a gain
into the three readings (sharpening, re-ranking, capability), answer distributions, and the pass@k analysis
of Lab 05. Every sampled number here comes through one path, sample_in_batches."""
import math
import numbers
from collections import Counter

import numpy as np
import torch

from utils import checks
from utils.models.policy import completion_logprobs, encode_prompts, fits, positions, sample
from utils.verifiers.arithmetic import strict_reward


def per_task_pass(model, tokenizer, rows, k=1, n=None, seed=0, max_new_tokens=64):
    """Held-out pass@1 of each task in a mixed split (utils.tasks.mix.load_mix: columns prompt, answer, task):
    k samples (temperature 1, seeded) of each of a task's first n problems (all: n=None), judged by the task's
    own verifier (utils.verifiers.mix.task_reward). Returns {task: pass@1} in the order the tasks first appear,
    plus "mean" (over tasks, each alike) and "worst" (the lowest task's)."""
    from utils.verifiers.mix import task_reward

    where = "per_task_pass"
    cols = getattr(rows, "column_names", None)
    if cols is None or not {"prompt", "answer", "task"} <= set(cols) or len(rows) == 0:
        raise ValueError(f"{where}: rows must be a non-empty Dataset with columns prompt, answer and task "
                         f"(utils.tasks.mix.load_mix), got {checks._short(rows)}")
    n = None if n is None else checks.number(where, "n", n, lo=1, integer=True)
    task, prompts, answers = list(rows["task"]), list(rows["prompt"]), list(rows["answer"])
    tasks, out = list(dict.fromkeys(task)), {}
    for t in tasks:
        idx = [i for i, x in enumerate(task) if x == t][:n]
        ps, ans = [prompts[i] for i in idx], [answers[i] for i in idx]
        out[t] = evaluate(model, tokenizer, ps, ans, k=k, max_new_tokens=max_new_tokens, seed=seed,
                          reward_fn=lambda c, a, t=t: task_reward(c, a, task=[t] * len(c)))["pass@1"]
    return out | {"mean": float(np.mean([out[t] for t in tasks])), "worst": min(out[t] for t in tasks)}


def pass_at_k(n, c, k):
    """Unbiased pass@k from n samples with c correct (Chen et al., arXiv 2107.03374):

        pass@k = 1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k / i)

    in the numerically stable product form. Exactly 1.0 when n - c < k.
    """
    n, c, k = (checks.number("pass_at_k", name, v, lo=0, integer=True) for name, v in (("n", n), ("c", c), ("k", k)))
    if k < 1 or k > n:
        raise ValueError(f"k must be in 1..n (n={n}), got k={k}")
    if c > n:
        raise ValueError(f"c (correct samples) cannot exceed n (samples): c={c}, n={n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@torch.no_grad()
def sample_in_batches(model, tokenizer, prompts, k=1, temperature=1.0, max_new_tokens=8, seed=0, batch_size=2048,
                      env_fn=None):
    """The one sampling path of every evaluation: k completions per prompt, about batch_size rows at a
    time, from one generator seeded with `seed`, so the same arguments give the same samples whoever
    asks. Yields (start, rollout): rollout holds the completions of prompts[start : start + its prompts].
    env_fn: None, or env_fn(n_rows) -> a fresh environment for each batch (policy.sample's env; e.g. a tool,
    utils.tasks.tools.Calculator)."""
    where = "sample_in_batches"
    prompts = checks.strings(where, "prompts", prompts)
    k = checks.number(where, "k", k, lo=1, hi=100_000, integer=True)
    seed = checks.number(where, "seed", seed, lo=0, hi=2**63 - 1, integer=True)
    batch_size = checks.number(where, "batch_size", batch_size, lo=1, integer=True)
    checks.function(where, "env_fn", env_fn, none=True)
    g = torch.Generator().manual_seed(seed)
    prompts, per = list(prompts), max(1, batch_size // k)
    for i in range(0, len(prompts), per):
        batch = prompts[i : i + per]
        yield i, sample(model, tokenizer, batch, k=k, temperature=temperature, max_new_tokens=max_new_tokens,
                        generator=g, env=env_fn(len(batch) * k) if env_fn else None)


@torch.no_grad()
def evaluate(model, tokenizer, prompts, answers, k=1, temperature=1.0, max_new_tokens=8,
             reward_fn=strict_reward, seed=0, batch_size=2048, entropy=False, env_fn=None):
    """Sample k completions per prompt (sample_in_batches, with env_fn's environment if given) and score them.
    Returns a dict:

    pass@1   mean reward over all samples (the unbiased pass@1)
    pass@k   mean over prompts of the unbiased pass@k (only when k > 1)
    correct  np.array [n_prompts] of correct counts out of k
    texts    the sampled completions, k per prompt, grouped by prompt
    entropy  (only with entropy=True) mean per-token entropy (nats) of the sampling distribution over
             the same samples' completion tokens
    """
    if isinstance(prompts, str) or isinstance(answers, str):
        raise ValueError("evaluate: prompts and answers must be lists (one entry per problem), not one string")
    prompts, answers = checks.sequence("evaluate", "prompts", prompts), checks.sequence("evaluate", "answers", answers)
    if not prompts or len(prompts) != len(answers):
        raise ValueError(f"evaluate needs one answer per prompt and at least one prompt (got {len(prompts)} prompts, "
                         f"{len(answers)} answers)")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"evaluate: k={k!r} must be an integer >= 1 (samples per prompt)")
    checks.function("evaluate", "reward_fn", reward_fn)
    texts, rewards, ent_sum, tok_sum = [], [], 0.0, 0.0
    for i, r in sample_in_batches(model, tokenizer, prompts, k, temperature, max_new_tokens, seed, batch_size,
                                  env_fn):
        texts += r.texts
        rewards += checks.reward_scores(reward_fn, "reward_fn", r.texts,
                           [a for a in answers[i : i + len(r.texts) // k] for _ in range(k)], {})
        if entropy:
            _, ent = completion_logprobs(model, r.prompt_ids, r.prompt_mask, r.completion_ids,
                                         r.completion_mask, temperature)                  # [N, T]
            ent_sum, tok_sum = ent_sum + float(ent.sum()), tok_sum + float(r.completion_mask.sum())
    correct = np.asarray(rewards, dtype=float).reshape(len(prompts), k).sum(1)
    out = {"pass@1": float(correct.sum() / (k * len(prompts))), "correct": correct, "texts": texts}
    if k > 1:
        out[f"pass@{k}"] = float(np.mean([pass_at_k(k, int(c), k) for c in correct]))
    if entropy:
        out["entropy"] = ent_sum / max(tok_sum, 1.0)
    return out


@torch.no_grad()
def policy_report(model, tokenizer, prompts, answers, k=8, temperature=1.0, max_new_tokens=8, seed=0,
                  batch_size=2048):
    """The four numbers that sort a gain into the course's three readings, on held-out prompts:

    greedy     accuracy of greedy decoding (temperature 0): the token-wise argmax at each step, which is not
               necessarily the most likely whole answer
    pass@1     sampled accuracy at `temperature` (mean over k samples per prompt)
    pass@k     share of prompts with at least one of k samples right (unbiased estimator)
    entropy    mean per-token entropy (nats) of the sampling distribution over those k samples
    Confidence sharpening lifts pass@1 toward greedy while greedy stays put; re-ranking within support lifts
    greedy and small-k pass@k while large-k pass@k stays flat; only capability lifts large-k pass@k (Lab 05).
    k = 8 here cannot tell the last two apart.
    """
    greedy = evaluate(model, tokenizer, prompts, answers, k=1, temperature=0, max_new_tokens=max_new_tokens,
                      batch_size=batch_size)["pass@1"]
    ev = evaluate(model, tokenizer, prompts, answers, k=k, temperature=temperature,
                  max_new_tokens=max_new_tokens, seed=seed, batch_size=batch_size, entropy=True)
    return {"greedy": greedy, "pass@1": ev["pass@1"], "entropy": ev["entropy"],
            f"pass@{k}": ev.get(f"pass@{k}", ev["pass@1"])}


HELDOUT_SEED = 12345  # every training-time evaluation samples from this seed: steps compare on equal terms


def eval_sets_of(eval_prompts=None, eval_answers=None, eval_sets=None):
    """The held-out sets a trainer evaluates, as {name: (prompts, answers)}: eval_prompts/eval_answers
    first, under the name "heldout", then eval_sets. Raises ValueError on a malformed set."""
    if eval_sets is not None and not isinstance(eval_sets, dict):
        raise ValueError(f"eval_sets must be a dict {{name: (prompts, answers)}} or None, got "
                         f"{checks._short(eval_sets)}")
    eval_sets = dict(eval_sets or {})
    for name, pair in eval_sets.items():
        if name == "heldout" or not (isinstance(pair, (tuple, list)) and len(pair) == 2
                                     and not isinstance(pair[0], (str, bytes)) and hasattr(pair[0], "__len__")
                                     and hasattr(pair[1], "__len__") and len(pair[0]) == len(pair[1]) > 0):
            raise ValueError(f"eval_sets[{name!r}] must be a (prompts, answers) pair of equal, non-zero length, "
                             f"under a name other than 'heldout' (that is eval_prompts/eval_answers)")
        checks.strings("eval_sets_of", f"eval_sets[{name!r}] prompts", pair[0])
    if eval_prompts is not None:
        checks.strings("eval_sets_of", "eval_prompts", eval_prompts)
        if eval_answers is not None:
            checks.sequence("eval_sets_of", "eval_answers", eval_answers)
        if eval_answers is None or len(eval_prompts) != len(eval_answers) or not len(eval_prompts):
            raise ValueError("eval_prompts and eval_answers must be given together, non-empty, of equal length")
        eval_sets = {"heldout": (eval_prompts, eval_answers), **eval_sets}
    return eval_sets


def heldout_keys(eval_sets, eval_rewards=None):
    """The record keys heldout_metrics can fill, all None: a step without an evaluation has them too
    ("heldout_pass@1" always, so that a plot of it works on any history)."""
    return {"heldout_pass@1": None, **{f"heldout_{r}": None for r in eval_rewards or {}},
            **{f"{name}_pass@1": None for name in eval_sets}}


def heldout_metrics(model, tokenizer, eval_sets, eval_rewards=None, n=200, temperature=1.0, max_new_tokens=8,
                    correct_fn=None):
    """What both trainers record at an evaluation step: for each named (prompts, answers) set, sampled
    pass@1 (judged by correct_fn(completions, answers), default the strict arithmetic verifier; Lab 06's
    traces: traces.outcome_reward) on its first n prompts, one sample each, seed HELDOUT_SEED, as
    "<name>_pass@1"; for the set named "heldout", also every eval_rewards {name: reward_fn} score of
    the same samples, as "heldout_<name>" (Lab 02: proxy reward vs true accuracy)."""
    where = "heldout_metrics"
    checks.model(where, "model", model)
    checks.tokenizer(where, "tokenizer", tokenizer)
    n = checks.number(where, "n", n, lo=1, integer=True)
    max_new_tokens = checks.number(where, "max_new_tokens", max_new_tokens, lo=1, integer=True)
    checks.function(where, "correct_fn", correct_fn, none=True)
    checks.function_dict(where, "eval_rewards", eval_rewards)
    if not isinstance(eval_sets, dict):
        raise ValueError(f"{where}: eval_sets must be a dict {{name: (prompts, answers)}}, got "
                         f"{checks._short(eval_sets)}")
    sets = {}
    for name, pair in eval_sets.items():
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ValueError(f"{where}: eval_sets[{name!r}] must be a (prompts, answers) pair, got "
                             f"{checks._short(pair)}")
        ps = checks.strings(where, f"eval_sets[{name!r}] prompts", pair[0])
        sets[name] = ps[:n], checks.sequence(where, f"eval_sets[{name!r}] answers", pair[1], len(ps))[:n]
        fits(where, f"eval_sets[{name!r}] prompts", model, tokenizer, sets[name][0], max_new_tokens)
    judge = correct_fn or strict_reward
    out = {}
    for name, (ps, ans) in sets.items():
        judged = lambda c, a, **kw: checks.reward_scores(judge, "correct_fn", c, a, kw)  # noqa: E731
        ev = evaluate(model, tokenizer, ps, ans, k=1, temperature=temperature, max_new_tokens=max_new_tokens,
                      seed=HELDOUT_SEED, reward_fn=judged)
        out[f"{name}_pass@1"] = ev["pass@1"]
        if name == "heldout":
            for r_name, fn in (eval_rewards or {}).items():
                scores = checks.reward_scores(fn, f"eval_rewards[{r_name!r}]", ev["texts"], ans, {})
                out[f"heldout_{r_name}"] = float(np.mean(scores))
    return out


# ------------------------------------------------------------------------------ answer distributions (Lab 04)

@torch.no_grad()
def answer_distribution(model, tokenizer, prompts, k=32, temperature=1.0, max_new_tokens=8, seed=0, batch_size=2048):
    """Sample k answers per prompt (sample_in_batches); returns one collections.Counter per prompt
    (answer text -> count)."""
    out = []
    for _, r in sample_in_batches(model, tokenizer, prompts, k, temperature, max_new_tokens, seed, batch_size):
        out += [Counter(x.strip() for x in r.texts[j * k:(j + 1) * k]) for j in range(len(r.texts) // k)]
    return out


@torch.no_grad()
def _answer_text(where, i, a):
    """An answer as the text a model writes: a str as it is; a whole number (834, 834.0, numpy's) as its digits
    ("834", not "834.0", which a column of floats would give). A ValueError naming answers[i] for anything else."""
    if isinstance(a, str):
        return a
    if isinstance(a, numbers.Real) and not isinstance(a, bool) and math.isfinite(a) and float(a).is_integer():
        return str(int(a))
    raise ValueError(f"{where}: answers[{i}]={checks._short(a)} is neither text nor a whole number: give each answer "
                     f"as the text the model should write")


def answer_logprob(model, tokenizer, prompts, answers, temperature=1.0, batch_size=512):
    """log p(answer + EOS | prompt) under the sampling distribution at `temperature`, per prompt:
    np.array [P] (nats, <= 0). A continuous view of accuracy that still moves where sampled accuracy
    sits at the floor (Lab 04's OOD split)."""
    checks.model("answer_logprob", "model", model)
    checks.tokenizer("answer_logprob", "tokenizer", tokenizer)
    prompts = checks.strings("answer_logprob", "prompts", prompts)
    answers = [_answer_text("answer_logprob", i, a) for i, a in enumerate(checks.sequence("answer_logprob", "answers",
                                                                                           answers))]
    batch_size = checks.number("answer_logprob", "batch_size", batch_size, lo=1, integer=True)
    if len(prompts) != len(answers):
        raise ValueError(f"prompts and answers differ in length ({len(prompts)} vs {len(answers)})")
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    pad = eos if pad is None else pad
    out, dev = [], next(model.parameters()).device
    for i in range(0, len(prompts), batch_size):
        p_ids, p_mask = encode_prompts(tokenizer, prompts[i:i + batch_size], dev)           # [B, P]
        rows = [tokenizer.encode(a, add_special_tokens=False) + [eos] for a in answers[i:i + batch_size]]
        T = max(len(r) for r in rows)
        if positions(model) and p_ids.shape[1] + T > positions(model):
            raise ValueError(f"answer_logprob: the longest of prompts ({p_ids.shape[1]} tokens) plus the longest of "
                             f"answers with EOS ({T}) needs {p_ids.shape[1] + T} positions and the model has "
                             f"{positions(model)}: shorten them")
        c_ids = torch.tensor([r + [pad] * (T - len(r)) for r in rows], device=dev)            # [B, T]
        c_mask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r in rows], device=dev) # [B, T]
        logp, _ = completion_logprobs(model, p_ids, p_mask, c_ids, c_mask, temperature)      # [B, T]
        out += logp.sum(1).tolist()
    return np.array(out)


# ------------------------------------------------------------------------------ pass@k analysis (Lab 05)

def _ks(where, ks, n=None):
    """ks as a non-empty list of integers in 1..n."""
    if isinstance(ks, (str, bytes, dict)) or not hasattr(ks, "__iter__") or not len(ks):
        raise ValueError(f"{where}: ks must be a non-empty list of integers >= 1, got {checks._short(ks)}")
    return [checks.number(where, "ks", k, lo=1, hi=n, integer=True) for k in ks]


def pass_at_k_table(n, ks):
    """pass@k for every possible count c = 0..n: [n + 1, len(ks)], so that the curve over problems with
    correct counts `correct` [P] is a lookup, table[correct].mean(0) (fast for bootstrapping)."""
    n = checks.number("pass_at_k_table", "n", n, lo=1, hi=100_000, integer=True)
    ks = _ks("pass_at_k_table", ks, n)
    return np.array([[pass_at_k(n, c, k) for k in ks] for c in range(n + 1)])


def bootstrap_pass_at_k(correct, n, ks, n_boot=1000, level=0.95, seed=0):
    """Bootstrap confidence band over problems for the pass@k curve: resample problems with
    replacement n_boot times. Returns (low [len(ks)], high [len(ks)])."""
    n = checks.number("bootstrap_pass_at_k", "n", n, lo=1, hi=100_000, integer=True)
    correct = checks.array("bootstrap_pass_at_k", "correct", correct, dims=1)
    if correct.size == 0 or (correct != np.round(correct)).any() or (correct < 0).any() or (correct > n).any():
        raise ValueError(f"bootstrap_pass_at_k: correct must be counts in 0..n={n}, one per problem")
    correct = correct.astype(int)
    ks = _ks("bootstrap_pass_at_k", ks, n)
    n_boot = checks.number("bootstrap_pass_at_k", "n_boot", n_boot, lo=1, hi=1_000_000, integer=True)
    level = checks.number("bootstrap_pass_at_k", "level", level, lo=0, hi=1, lo_open=True, hi_open=True)
    seed = checks.number("bootstrap_pass_at_k", "seed", seed, lo=0, integer=True)
    table = pass_at_k_table(n, ks)                          # [n + 1, K]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(correct), (n_boot, len(correct)))  # [B, P]
    curves = table[correct[idx]].mean(1)                     # [B, K]
    a = (1 - level) / 2
    return np.quantile(curves, a, axis=0), np.quantile(curves, 1 - a, axis=0)


def compression_ratio(before_1, before_k, after_1):
    """Share of the base model's pass@1-to-pass@k gap that the trained model's pass@1 closed:
    (after pass@1 - before pass@1) / (before pass@k - before pass@1); the worked example 40/75 -> 65/77
    gives 25/35 = 0.71. "Above about 0.7 the gain is mostly search compression" is a practitioners' rule of
    thumb for small k (the example's k = 8), not a published result; the ratio falls as k grows even when
    nothing changes (the gap widens), so read it at one k, never against a fixed 0.7 at every k.
    nan if there is no gap."""
    before_1, before_k, after_1 = (checks.number("compression_ratio", name, v, lo=0, hi=1) for name, v in
                                   (("before_1", before_1), ("before_k", before_k), ("after_1", after_1)))
    gap = before_k - before_1
    return float((after_1 - before_1) / gap) if gap > 0 else float("nan")


def read_pass_at_k(d1, dk, tol=0.02):
    """The interpretation table: d1, dk are the changes in pass@1 and pass@k (fractions). tol is the
    course's own fixed tolerance (2 points), not a significance test: test a difference with a paired
    bootstrap before claiming it."""
    d1, dk = (checks.number("read_pass_at_k", n, v, lo=-1, hi=1) for n, v in (("d1", d1), ("dk", dk)))
    tol = checks.number("read_pass_at_k", "tol", tol, lo=0, hi=1)
    if d1 < -tol and dk < -tol:
        return "both down: mode collapse"
    if d1 > tol and dk > tol:
        return "pass@1 up and pass@k up: more reached at this k (capability only where guessing cannot reach it)"
    if d1 > tol and abs(dk) <= tol:
        return "pass@1 up, pass@k flat: compression (sharpening or re-ranking within support)"
    if d1 > tol and dk < -tol:
        return "pass@1 up, pass@k down: compression at the cost of coverage"
    if abs(d1) <= tol and dk < -tol:
        return "pass@1 flat, pass@k down: coverage lost (narrowing toward collapse)"
    if d1 < -tol:
        return "pass@1 down: worse at one try"
    if abs(d1) <= tol and dk > tol:
        return "pass@1 flat, pass@k up: wider coverage"
    return "no clear change"


# ------------------------------------------------------------------------- guessing baseline (Lab 05)

def guess_rate(answer):
    """The chance that one guess is right for a guesser that knows the answer's sign and number of digits
    and picks uniformly among the integers of that shape: 1/10 for one digit (0-9), 1/9 for -1..-9, and
    1/(9 * 10^(d-1)) for d >= 2 digits ("66": 1/90, "-123": 1/900). answer: the right answer as text.
    A generous guesser: it is told the length and sign, which the model has to work out."""
    digits = str(answer).strip().lstrip("-")
    if not digits.isdigit():
        raise ValueError(f"guess_rate needs an integer answer as text, like '66' or '-12'; got {answer!r}")
    if len(digits) == 1:
        return 1 / 9 if str(answer).strip().startswith("-") else 1 / 10
    return 1 / (9 * 10 ** (len(digits) - 1))


def guess_pass_at_k(answers, ks):
    """pass@k of that guesser: [P, len(ks)], 1 - (1 - q)^k with q = guess_rate(answer), k independent
    guesses (with replacement, as sampling is). What pass@k would be with no skill beyond the answer's shape."""
    answers = checks.sequence("guess_pass_at_k", "answers", answers)
    if not answers:
        raise ValueError("guess_pass_at_k: answers is empty: give the right answer of each problem")
    _ks("guess_pass_at_k", ks, 10**9)
    q = []
    for i, a in enumerate(answers):
        try:
            q.append(guess_rate(a))
        except ValueError:
            raise ValueError(f"guess_pass_at_k: answers[{i}]={checks._short(a)} must be an integer answer as text, "
                             f"like '66' or '-12'") from None
    q = np.array(q)[:, None]                                       # [P, 1]
    return 1 - (1 - q) ** np.asarray(ks)[None, :]                  # [P, K]


def largest_k_under(curve, ks, level=0.05):
    """The largest k in ks whose value in curve [len(ks)] stays under level (the guessing curve rises with
    k). Returns None if even the smallest k is at or over the level."""
    curve = checks.array("largest_k_under", "curve", curve, dims=1).tolist()
    ks = _ks("largest_k_under", ks)
    if len(ks) != len(curve):
        raise ValueError(f"largest_k_under: curve has {len(curve)} values and ks {len(ks)}: one per k")
    level = checks.number("largest_k_under", "level", level, lo=0, hi=1)
    under = [k for k, v in zip(ks, curve) if v < level]
    return int(max(under)) if under else None


# ------------------------------------------------------------------- per-prompt pass rates (Lab 07's data)

def pass_rates(model, tokenizer, prompts, answers, correct_fn, n=16, max_new_tokens=64, seed=0, columns=None,
               batch_size=1024):
    """The share of n samples (temperature 1, seeded) that correct_fn judges right (>= 1.0), per prompt:
    a float array [len(prompts)]. correct_fn has the verifier signature (completions, answer, **columns);
    columns {name: list aligned with prompts} are passed to it, one value per completion."""
    prompts = checks.strings("pass_rates", "prompts", prompts)
    answers = checks.sequence("pass_rates", "answers", answers)
    checks.function("pass_rates", "correct_fn", correct_fn)
    n = checks.number("pass_rates", "n", n, lo=1, hi=100_000, integer=True)
    if columns is not None and not isinstance(columns, dict):
        raise ValueError(f"pass_rates: columns must be a dict {{name: list aligned with prompts}} or None, got "
                         f"{checks._short(columns)}")
    for name, col in (columns or {}).items():
        if name in ("completions", "answer"):
            raise ValueError("pass_rates: columns must be named other than 'completions' and 'answer'")
        checks.sequence("pass_rates", f"columns[{name!r}]", col, len(prompts))
    if n < 1 or not len(prompts) or len(prompts) != len(answers):
        raise ValueError(f"pass_rates needs n >= 1 and prompts and answers of one non-zero length (got n={n}, "
                         f"{len(prompts)} prompts, {len(answers)} answers)")
    columns = columns or {}
    out = np.zeros(len(prompts))
    for i, ro in sample_in_batches(model, tokenizer, prompts, k=n, max_new_tokens=max_new_tokens, seed=seed,
                                   batch_size=batch_size):
        m = len(ro.texts) // n
        ans = [answers[i + j // n] for j in range(m * n)]
        extra = {c: [col[i + j // n] for j in range(m * n)] for c, col in columns.items()}
        right = np.array(checks.reward_scores(correct_fn, "correct_fn", ro.texts, ans, extra)) >= 1.0   # [m * n]
        out[i:i + m] = right.reshape(m, n).mean(1)
    return out


# two-sided 95% quantiles of Student's t for 1-10 degrees of freedom (any statistics table)
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def seed_difference(a, b):
    """Paired over seeds: a[i] - b[i] for runs of the same seed i. Returns (mean difference, half-width of its 95%
    t interval): what a comparison on this many seeds could and could not detect. Needs 2-11 seeds."""
    a, b = (checks.array("seed_difference", n, v, dims=1) for n, v in (("a", a), ("b", b)))
    if a.shape != b.shape:
        raise ValueError(f"seed_difference: a has {len(a)} seeds and b {len(b)}: they must be paired, one per seed")
    d = a - b
    if not 2 <= len(d) <= 11:
        raise ValueError(f"seed_difference: need 2 to 11 paired seeds in a and b; got {len(d)}")
    return float(d.mean()), float(T95[len(d) - 1] * d.std(ddof=1) / np.sqrt(len(d)))

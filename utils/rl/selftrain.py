"""Generations of self-training (Lab 09): a closed loop against verified ones, on the scratchpad task.

Each generation starts from the model the last one left. It draws n_prompts train problems afresh (seeded), has the
model write k completions of each (n_prompts * k samples), keeps some of them (`how`), and fine-tunes on what it
kept for `steps` AdamW steps of batch_size examples (utils.models.sft.fine_tune: cycled when the kept ones run
out, so every way takes the same compute):

    closed      every sample: the model learns from what it wrote and nothing checks it. A closed system: the
                model-collapse setting (Shumailov et al., arXiv 2305.17493), whose tails vanish first
    verified    only the samples the verifier passes (outcome_reward): rejection-sampling fine-tuning, expert
                iteration, STaR (arXiv 2203.14465). Verification is the information that comes in
    grpo        no fine-tuning: GRPO (train_grpo) on the same budget, `steps` updates of batch_size completions,
                groups of k; right and wrong samples both teach, through their advantages
    teacher     a teacher that sees what the student does not (the answer and its carries: privileged
                information) writes the right working for the same problems, and the student is fine-tuned on it.
                pi-Distill's setting, with a script for the teacher
    teacher_answer  the same teacher writes only '>answer': a text that depends on what the student cannot see

Three more ways keep every sample, as closed does, and isolate why a closed loop drifts (issue 57):

    base_samples  the control for closed: the same budget, but each generation fine-tunes on fresh samples of the
                  frozen base, not of the model the last generation left. Nothing is handed on but the weights, so
                  no generation's sampling noise becomes the next one's target
    cool          closed at temperature 0.7: mode-seeking generation, which over-samples the model's likely
                  outputs (the collapse papers' setting: arXiv 2305.17493, 2502.15654)
    refit         closed at temperature 1, but each generation is a fresh copy of the base fine-tuned on the last
                  generation's samples: a chain of models, each fitted to its parent's output (Shumailov et al.)

Why these: fine-tuning on your own samples at temperature 1 has zero expected gradient (E over y ~ p of
grad log p(y) = 0), so the closed loop can only move by noise, which each generation hands on as its successor's
data; base_samples keeps the noise and removes the hand-on, cool gives the update a direction (towards the mode).

Every generation (and the start, generation 0) is judged on held-out rows by generation_metrics.
"""
import copy
import random
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch

from utils import checks
from utils.eval.metrics import answer_logprob, evaluate
from utils.eval.traces import rows_of
from utils.models.policy import fits, sample
from utils.models.sft import fine_tune
from utils.rl.grpo import GRPOConfig
from utils.rl.loop import train_grpo
from utils.rl.rollout import GroupRollout
from utils.tasks.scratchpad import format_trace, steps_for
from utils.verifiers.traces import outcome_reward, parse

WAYS = ("closed", "verified", "grpo", "teacher", "teacher_answer", "base_samples", "cool", "refit")
UNCHECKED = ("closed", "base_samples", "cool", "refit")   # ways that keep every sample they drew
TEMPERATURE = {"cool": 0.7}                                # the sampling temperature of a way; 1 otherwise


@dataclass
class SelfTrainConfig:
    """One generation's budget, the same for every way: n_prompts * k completions sampled, and `steps` steps of
    batch_size examples (fine-tuning at lr; GRPO at grpo_lr, the trace labs' rate)."""
    generations: int = 5
    n_prompts: int = 64
    k: int = 8
    steps: int = 8
    batch_size: int = 64
    lr: float = 1e-4
    grpo_lr: float = 1e-4
    max_new_tokens: int = 64
    eval_k: int = 8
    eval_n: int = 200
    seed: int = 0

    def __post_init__(self):
        self.validate()

    def validate(self):
        where = "SelfTrainConfig"
        for name in ("generations", "n_prompts", "steps", "batch_size", "max_new_tokens", "eval_k", "eval_n"):
            setattr(self, name, checks.number(where, name, getattr(self, name), lo=1, hi=1_000_000, integer=True))
        self.generations = checks.number(where, "generations", self.generations, lo=1, hi=100, integer=True)
        self.k = checks.number(where, "k", self.k, lo=2, hi=1024, integer=True)
        self.seed = checks.number(where, "seed", self.seed, lo=0, hi=2**31 - 1, integer=True)
        for name in ("lr", "grpo_lr"):
            setattr(self, name, checks.number(where, name, getattr(self, name), lo=0, hi=1.0, lo_open=True))
        if self.n_prompts * self.k != self.steps * self.batch_size:
            raise ValueError(f"{where}: n_prompts * k ({self.n_prompts * self.k}) must equal steps * batch_size "
                             f"({self.steps * self.batch_size}): GRPO samples steps * batch_size completions a "
                             f"generation, the fine-tuning ways n_prompts * k")
        if self.batch_size % self.k:
            raise ValueError(f"{where}: batch_size={self.batch_size} must be divisible by k={self.k} (GRPO's groups)")
        return self


def teacher_text(a, b, working=True):
    """What the privileged teacher writes for a + b: the right working and answer ('8+6+0=14 ... >834'), or with
    working=False only '>834'."""
    steps = steps_for(a, b)   # checks a and b
    answer = str(int(a) + int(b))
    return format_trace(steps, answer) if checks.flag("teacher_text", "working", working) else ">" + answer


def _samples(where, prompts, texts, answers, k):
    """prompts, texts, answers as lists and k as an int, after checking that texts holds k completions a prompt and
    answers one entry a prompt."""
    prompts = checks.sequence(where, "prompts", prompts)
    texts = checks.sequence(where, "texts", texts)
    k = checks.number(where, "k", k, lo=1, hi=1_000_000, integer=True)
    answers = checks.sequence(where, "answers", answers)
    if len(answers) != len(prompts):
        raise ValueError(f"{where}: answers has {len(answers)} entries and prompts {len(prompts)}: give one answer "
                         f"per prompt")
    if len(texts) != len(prompts) * k:
        raise ValueError(f"{where}: {len(texts)} texts for {len(prompts)} prompts and k={k}: texts must hold k "
                         f"completions a prompt, in order")
    return prompts, texts, answers, k


def verified_pairs(prompts, texts, answers, k):
    """The (prompt, completion) pairs the verifier passes (outcome_reward: the answer after the last '>' is the
    problem's), in order: texts holds k completions of each prompt, answers one entry a prompt. STaR's filter."""
    prompts, texts, answers, k = _samples("verified_pairs", prompts, texts, answers, k)
    right = outcome_reward(texts, [answers[i // k] for i in range(len(texts))])
    return [(prompts[i // k], t) for i, (t, ok) in enumerate(zip(texts, right)) if ok >= 1.0]


def keep(how, prompts, texts, answers, a, b, k):
    """The (prompt, completion) pairs a fine-tuning way keeps from one generation's samples: texts holds k
    completions of each prompt, in order; answers, a, b one entry per prompt."""
    if how not in WAYS or how == "grpo":
        raise ValueError(f"keep: how={checks._short(how)} must be one of {tuple(w for w in WAYS if w != 'grpo')} "
                         f"(grpo keeps nothing: it trains on advantages)")
    prompts, texts, answers, k = _samples("keep", prompts, texts, answers, k)
    n = len(prompts)
    a, b = checks.sequence("keep", "a", a), checks.sequence("keep", "b", b)
    if not len(a) == len(b) == n:
        raise ValueError(f"keep: a has {len(a)} entries, b {len(b)} and prompts {n}: give one a and one b per prompt")
    if how in ("teacher", "teacher_answer"):
        return [(prompts[i], teacher_text(a[i], b[i], how == "teacher")) for i in range(n) for _ in range(k)]
    if how in UNCHECKED:
        return [(prompts[i // k], t) for i, t in enumerate(texts)]
    return verified_pairs(prompts, texts, answers, k)


def format_of(text, a, b):
    """The shape of a completion for a + b, against the right number of steps (steps_for): 'bare' ('>answer' with
    no working), 'skipped' (fewer steps than the sum needs), 'padded' (more), 'steps' (as many), or 'other' (no
    answer). The pre-training corpus's rare formats (scratchpad.NOISE): bare 5%, skip 10%, pad 10%."""
    need = len(steps_for(a, b))   # checks a and b
    t = parse(text)
    if t is None or t["answer"] is None:
        return "other"
    n = len([s for s in t["steps"] if s is not None])
    return "bare" if n == 0 else "skipped" if n < need else "padded" if n > need else "steps"


def disagreement(values):
    """The chance that two of `values` drawn without replacement differ (Gini-Simpson on pairs); None for fewer
    than two. It does not move with how many values there are, only with how they spread: [1, 1, 2] gives 2/3."""
    values = checks.sequence("disagreement", "values", values)
    for v in values:
        try:
            hash(v)
        except TypeError:
            raise ValueError(f"disagreement: values must be answers (text, numbers or None), got "
                             f"{checks._short(v)} among them") from None
    n = len(values)
    if n < 2:
        return None
    counts = np.array([values.count(v) for v in dict.fromkeys(values)], dtype=float)
    return float(1 - (counts * (counts - 1)).sum() / (n * (n - 1)))


def _wrong_spread(groups, rights, digits):
    """{'all': mean, d: mean over problems of d digits} of the disagreement among a problem's wrong answers (None
    where no problem had two wrong samples); groups: each problem's k answers, rights: their 0/1 verdicts."""
    per = [(d, disagreement([x for x, ok in zip(g, r) if not ok])) for g, r, d in zip(groups, rights, digits)]
    per = [(d, v) for d, v in per if v is not None]
    mean = lambda xs: float(np.mean(xs)) if xs else None  # noqa: E731
    return {"all": mean([v for _, v in per])} | {str(d): mean([v for e, v in per if e == d])
                                                 for d in sorted(set(digits))}


def _judge(model, tokenizer, rows, k, seed, max_new_tokens, temperature=1.0):
    """(generation_metrics' measures, the texts sampled: k a row, in order)."""
    ev = evaluate(model, tokenizer, list(rows["prompt"]), list(rows["answer"]), k=k, seed=seed,
                  max_new_tokens=max_new_tokens, reward_fn=outcome_reward, entropy=True, temperature=temperature)
    texts = ev["texts"]
    right = outcome_reward(texts, [x for x in rows["answer"] for _ in range(k)])
    groups = [texts[i:i + k] for i in range(0, len(texts), k)]
    answers = [[(parse(t) or {}).get("answer") for t in g] for g in groups]
    rights = [right[i:i + k] for i in range(0, len(right), k)]
    lengths = np.array([len(t) for t in texts], dtype=float)
    out = {"pass@1": ev["pass@1"], f"pass@{k}": ev[f"pass@{k}"], "entropy": ev["entropy"],
           "distinct": float(np.mean([len(set(g)) for g in groups])),
           "distinct_answers": float(np.mean([len(set(x)) for x in answers])),
           "mode_share": float(np.mean([max(g.count(t) for t in g) / k for g in groups])),
           "length": float(lengths.mean()), "length_std": float(lengths.std()),
           "well_formed": float(np.mean([bool((parse(t) or {}).get("well_formed")) for t in texts]))}
    if {"a", "b"} <= set(getattr(rows, "column_names", rows)):
        a, b = list(rows["a"]), list(rows["b"])
        forms = [format_of(t, a[i // k], b[i // k]) for i, t in enumerate(texts)]
        out |= {f"format_{f}": forms.count(f) / len(forms) for f in ("bare", "skipped", "padded", "other")}
        digits = [max(len(str(x)), len(str(y))) for x, y in zip(a, b)]
        out["wrong_spread"] = _wrong_spread(answers, rights, digits)
    return out, texts


def generation_metrics(model, tokenizer, rows, k=8, seed=0, max_new_tokens=64, reference=None,
                       reference_texts=None):
    """How a generation writes, on held-out `rows` (prompt, answer, a, b), k samples a problem at temperature 1:

    pass@1, pass@k   the outcome (right answer after '>')
    entropy          mean token entropy of the sampling distribution (nats)
    distinct         distinct completions among a problem's k, averaged over problems (k: all differ; 1: one text)
    distinct_answers the same for the answers alone
    mode_share       the share of a problem's k samples that are its most common completion (the head; 1 - it is
                     the tails' share)
    length, length_std  completion length (characters) and its spread over all samples
    well_formed      the share of samples that parse as steps then '>answer'

    On this task the right trace of a sum is unique, so entropy, distinct and mode_share move with pass@1 (Lab 09
    measured r = 0.99). Measures that need not (rows with a and b):

    format_bare, format_skipped, format_padded, format_other   the shares of samples in each shape (format_of):
                     the pre-training corpus's rare formats; in the collapse papers the tails vanish first
    wrong_spread     {'all', '2', '3', '4'}: the chance that two wrong answers to the same problem differ
                     (disagreement), over problems with two or more wrong samples, and per digit count: how
                     varied the errors are, whatever their number

    With `reference` (a model: the base), the drift from it, per completion (nats, with the EOS; a completion cut at
    the cap is scored as if it ended there):

    kl_model_base    KL(model || reference), on the model's own samples: what the model writes that the base
                     would not (mode-seeking moves raise it)
    kl_base_model    KL(reference || model), on reference_texts (k of the reference's samples a row, required with
                     reference): what the base writes that the model has lost (the tails' loss raises it)
    """
    where = "generation_metrics"
    checks.model(where, "model", model)
    checks.tokenizer(where, "tokenizer", tokenizer)
    names = list(rows) if isinstance(rows, dict) else getattr(rows, "column_names", None)
    rows_of(where, rows, ("prompt", "answer") + (("a", "b") if isinstance(names, list) and {"a", "b"} <= set(names)
                                                 else ()))   # a and b, where given, are read: check them too
    k = checks.number(where, "k", k, lo=2, hi=10_000, integer=True)
    max_new_tokens = checks.number(where, "max_new_tokens", max_new_tokens, lo=1, hi=100_000, integer=True)
    fits(where, "rows['prompt']", model, tokenizer, list(rows["prompt"]), max_new_tokens)
    if reference is not None:
        checks.model(where, "reference", reference)
        reference_texts = checks.strings(where, "reference_texts", reference_texts)
        if len(reference_texts) != len(rows["prompt"]) * k:
            raise ValueError(f"{where}: reference_texts has {len(reference_texts)} texts: give k={k} of the "
                             f"reference's samples for each of the {len(rows['prompt'])} rows, in order")
    elif reference_texts is not None:
        raise ValueError(f"{where}: reference_texts without reference: give the model that wrote them")
    out, texts = _judge(model, tokenizer, rows, k, seed, max_new_tokens)
    if reference is not None:
        prompts = [p for p in rows["prompt"] for _ in range(k)]
        own = answer_logprob(model, tokenizer, prompts, texts) - answer_logprob(reference, tokenizer, prompts, texts)
        theirs = (answer_logprob(reference, tokenizer, prompts, reference_texts)
                  - answer_logprob(model, tokenizer, prompts, reference_texts))
        out |= {"kl_model_base": float(own.mean()), "kl_base_model": float(theirs.mean())}
    return out


def self_train(base, tokenizer, train, test, how, cfg=None, progress=True):
    """cfg.generations generations of `how` (WAYS) from a copy of `base`, on scratchpad rows `train` (prompt,
    answer, a, b), judged on the first cfg.eval_n rows of `test` after each. Returns dict(how, config, history:
    one record per generation, 0 being the start (generation_metrics, plus kept: the examples trained on, and
    seconds), model)."""
    where = "self_train"
    checks.model(where, "base", base)
    checks.tokenizer(where, "tokenizer", tokenizer)
    if how not in WAYS:
        raise ValueError(f"{where}: how={checks._short(how)} must be one of {WAYS}")
    cfg = (cfg or SelfTrainConfig()).validate() if isinstance(cfg, (SelfTrainConfig, type(None))) else None
    if cfg is None:
        raise ValueError(f"{where}: cfg must be a SelfTrainConfig")
    for name, rows in (("train", train), ("test", test)):
        rows_of(where, rows, ("prompt", "answer", "a", "b"), name=name)
    test = {c: list(test[c])[:cfg.eval_n] for c in ("prompt", "answer", "a", "b")}
    model = copy.deepcopy(base).eval()
    rng = random.Random(cfg.seed)
    prompts, answers, a, b = (list(train[c]) for c in ("prompt", "answer", "a", "b"))

    ref_texts = evaluate(base, tokenizer, test["prompt"], test["answer"], k=cfg.eval_k, seed=cfg.seed + 10_000,
                         max_new_tokens=cfg.max_new_tokens, reward_fn=outcome_reward)["texts"]   # the base's samples

    def judge(gen, kept, seconds):
        m = generation_metrics(model, tokenizer, test, k=cfg.eval_k, seed=cfg.seed, max_new_tokens=cfg.max_new_tokens,
                               reference=base, reference_texts=ref_texts)
        return {"generation": gen, "kept": kept, "seconds": round(seconds, 2), **m}

    history = [judge(0, 0, 0.0)]
    bar = range(1, cfg.generations + 1)
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(bar, desc=progress if isinstance(progress, str) else f"{how}: generations")
    for gen in bar:
        t = time.time()
        seed = cfg.seed * 1000 + gen
        if how == "grpo":
            gcfg = GRPOConfig(steps=cfg.steps, batch_size=cfg.batch_size, group_size=cfg.k, lr=cfg.grpo_lr,
                              max_new_tokens=cfg.max_new_tokens, eval_every=0, track_kl=False, seed=seed)
            train_grpo(model, tokenizer, prompts, answers, outcome_reward, gcfg, progress=False,
                       rollout=GroupRollout(columns={"a": a, "b": b}))
            kept = cfg.steps * cfg.batch_size
        else:
            idx = [rng.randrange(len(prompts)) for _ in range(cfg.n_prompts)]
            writer = base if how == "base_samples" else model          # who writes this generation's data
            texts = [] if how.startswith("teacher") else sample(
                writer, tokenizer, [prompts[i] for i in idx], k=cfg.k, max_new_tokens=cfg.max_new_tokens,
                temperature=TEMPERATURE.get(how, 1.0), generator=torch.Generator().manual_seed(seed)).texts
            pairs = keep(how, [prompts[i] for i in idx], texts or [""] * (len(idx) * cfg.k),
                         [answers[i] for i in idx], [a[i] for i in idx], [b[i] for i in idx], cfg.k)
            if how == "refit":                                             # the child starts from the base
                model = copy.deepcopy(base)
            fine_tune(model, tokenizer, pairs, cfg.steps, cfg.batch_size, cfg.lr, seed=seed)
            kept = len(pairs)
        model.eval()
        history.append(judge(gen, kept, time.time() - t))
    return {"how": how, "config": asdict(cfg), "history": history, "model": model}

"""A learned judge (Lab 11): a small reward model that reads a problem and a completion and returns the
probability that the completion is right, trained on labelled completions (noisy labels: a rule's verdicts with a
share flipped, the proxy reward model of Gao et al., arXiv 2210.10760; not a judge that reads principles, RLAIF).
It starts from random weights or from the shipped arithmetic model's (JudgeConfig.init).

The judge is a GPT-2 with a one-number head (transformers' GPT2ForSequenceClassification, num_labels=1) over the
policy's own character tokenizer; it reads `problem + completion` and scores the last token (right padding, so
the head reads the last real token). It reads at most n_positions tokens (32 by default): a longer pair keeps
its problem whole and the completion's last tokens (what it ends with, the answer), so a long completion cannot
push the problem out of view; a pair whose problem alone fills the window, or that the tokenizer cannot encode,
cannot be judged (judge_probs names it; judge_scorer answers NaN for it alone, which JudgeClient sends to its
fallback). Trained with binary cross-entropy on each label, or (JudgeConfig(loss="pairwise")) as a reward model of
pairs: Bradley-Terry on a right and a wrong completion of the same problem (arXiv 2203.02155), whose sigmoid ranks
completions but is not a calibrated probability. judge_scorer makes it a scorer for
utils.verifiers.api.JudgeClient; judge_probs is the same in one call. Reward-model over-optimisation under RL
(the proxy climbs while the truth turns down): Gao et al., arXiv 2210.10760; ensembles against it: Coste et al.,
arXiv 2310.02743.
"""
import bisect
import copy
import math
from dataclasses import asdict, dataclass

import torch

from utils import checks

INITS = ("scratch", "rlvr-base")   # a judge's starting weights: random, or the shipped arithmetic model's body
LOSSES = ("pointwise", "pairwise")  # binary cross-entropy on each label, or Bradley-Terry on pairs (module docstring)


@dataclass
class JudgeConfig:
    """The judge's size and training: n_layer, n_embd, n_head (GPT-2's), steps of batch_size examples at lr
    (AdamW, constant), and the seed of its initialisation and batch order. n_positions: the longest
    problem + completion it reads, in tokens (longer ones are cut to their last n_positions tokens). init: "scratch"
    (random weights at this size) or "rlvr-base" (the shipped arithmetic model's body under a fresh one-number head:
    its size is the model's, so n_layer, n_embd and n_head are not read; n_positions may not exceed the model's)."""
    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 4
    n_positions: int = 32
    steps: int = 600
    batch_size: int = 64
    lr: float = 1e-3
    seed: int = 0
    init: str = "scratch"
    loss: str = "pointwise"

    def validate(self):
        w = "JudgeConfig"
        if self.init not in INITS:
            raise ValueError(f"{w}: init must be one of {INITS}, got {checks._short(self.init)}")
        if self.loss not in LOSSES:
            raise ValueError(f"{w}: loss must be one of {LOSSES}, got {checks._short(self.loss)}")
        for name, lo, hi in (("n_layer", 1, 48), ("n_embd", 4, 4096), ("n_head", 1, 64), ("n_positions", 4, 4096),
                             ("steps", 0, 1_000_000), ("batch_size", 1, 65_536), ("seed", 0, 2**63 - 1)):
            checks.number(w, name, getattr(self, name), lo=lo, hi=hi, integer=True)
        checks.number(w, "lr", self.lr, lo=0, hi=1, lo_open=True)
        if self.n_embd % self.n_head:
            raise ValueError(f"JudgeConfig: n_embd={self.n_embd} must be a multiple of n_head={self.n_head}")
        return self


def make_judge(tokenizer, cfg=None):
    """An untrained judge for texts in `tokenizer`'s characters, at cfg's size (JudgeConfig() by default)."""
    from transformers import GPT2Config, GPT2ForSequenceClassification

    cfg = _cfg("make_judge", cfg)
    checks.tokenizer("make_judge", "tokenizer", tokenizer)
    torch.manual_seed(cfg.seed)
    if cfg.init != "scratch":
        return _from_model(tokenizer, cfg)
    return GPT2ForSequenceClassification(GPT2Config(
        vocab_size=len(tokenizer), n_positions=cfg.n_positions, n_embd=cfg.n_embd, n_layer=cfg.n_layer,
        n_head=cfg.n_head, num_labels=1, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id, activation_function="gelu_pytorch_tanh"))


def _from_model(tokenizer, cfg):
    """A judge whose body is the shipped model cfg.init's (its weights, its size) and whose head is new (seeded)."""
    from transformers import GPT2ForSequenceClassification

    from utils.models.policy import load_policy

    model, model_tok = load_policy(cfg.init)
    if model_tok.get_vocab() != tokenizer.get_vocab():
        raise ValueError(f"make_judge: init={cfg.init!r} reads another tokenizer's ids; judge with its tokenizer "
                         f"(load_policy({cfg.init!r})[1]) or init='scratch'")
    if cfg.n_positions > model.config.n_positions:
        raise ValueError(f"make_judge: n_positions={cfg.n_positions} is more than {cfg.init!r} reads "
                         f"({model.config.n_positions}); set n_positions <= {model.config.n_positions}")
    conf = copy.deepcopy(model.config)
    conf.num_labels, conf.pad_token_id, conf.architectures = 1, tokenizer.pad_token_id, None
    judge = GPT2ForSequenceClassification(conf)           # the head drawn from the seeded stream, as at scratch
    judge.transformer.load_state_dict(model.transformer.state_dict())
    return judge


def _window(tokenizer, problem, completion, n_positions):
    """The token ids the judge reads for one pair: problem + completion as one text when it fits in n_positions;
    else the problem's ids and the completion's last ones, n_positions in all. None where the pair cannot be read
    (the tokenizer refuses a text: a lone surrogate, say; or the problem alone fills the window)."""
    def ids(text):
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    try:
        whole = ids(problem + completion)
        if len(whole) <= n_positions:
            return whole or [tokenizer.pad_token_id]
        head = ids(problem)
        return head + ids(completion)[len(head) - n_positions:] if len(head) < n_positions else None
    except Exception:  # noqa: BLE001 - the tokenizer's own error, whatever it is: this pair cannot be read
        return None


def _encode_pairs(tokenizer, problems, completions, n_positions, where=None):
    """(ids [N, L] long, attention mask [N, L] long, readable [N] bool) for the pairs problem + completion as the
    judge reads them (_window), right-padded (L <= n_positions). With `where` (a function's name), a pair that
    cannot be read is a ValueError naming it; without, it is a row of padding marked unreadable."""
    rows, readable = [], []
    for i, (p, c) in enumerate(zip(problems, completions)):
        row = _window(tokenizer, p, c, n_positions)
        if row is None and where:
            raise ValueError(f"{where}: the pair problems[{i}] + completions[{i}] cannot be judged: the tokenizer "
                             f"cannot encode it, or the problem alone fills the judge's {n_positions} positions "
                             f"(got {checks._short(p)} and {checks._short(c)})")
        rows.append(row or [tokenizer.pad_token_id])
        readable.append(row is not None)
    L = max(map(len, rows)) if rows else 1
    ids = torch.full((len(rows), L), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(rows), L), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)], mask[i, :len(r)] = torch.tensor(r), 1
    return ids, mask, torch.tensor(readable, dtype=torch.bool)


def _judge_logits(judge, tokenizer, problems, completions, where=None, batch_size=512):
    """The judge's logits [N] for the pairs (no gradient), read at each text's last real token; NaN for a pair
    that cannot be read (a ValueError naming it, with `where`)."""
    n_positions = judge.config.n_positions
    out = []
    with torch.no_grad():
        for s in range(0, len(problems), batch_size):
            ids, mask, readable = _encode_pairs(tokenizer, problems[s:s + batch_size], completions[s:s + batch_size],
                                                n_positions, where)
            out.append(_last_logit(judge, ids, mask).masked_fill(~readable, math.nan))
    return torch.cat(out) if out else torch.zeros(0)


def _last_logit(judge, ids, mask):
    """The head's output at each row's last real token [N] (the model's own pooling needs pad ids after it,
    which a pad id that is also a real character would break, so it is read here from the mask)."""
    hidden = judge.transformer(input_ids=ids, attention_mask=mask).last_hidden_state   # [N, L, d]
    last = mask.sum(1) - 1                                                              # [N]
    return judge.score(hidden[torch.arange(len(ids)), last]).squeeze(-1)                # [N]


def judge_probs(judge, tokenizer, problems, completions):
    """P(right) per pair, a list of floats in [0, 1]. A pair the judge cannot read (see the module docstring) is a
    ValueError naming it."""
    where = "judge_probs"
    checks.model(where, "judge", judge)
    checks.tokenizer(where, "tokenizer", tokenizer)
    problems = checks.strings(where, "problems", problems)
    completions = _texts(where, completions)
    if len(problems) != len(completions):
        raise ValueError(f"{where}: problems and completions must pair up: {len(problems)} and {len(completions)}")
    return _probs(judge, tokenizer, problems, completions, where)


def _probs(judge, tokenizer, problems, completions, where=None):
    was = judge.training
    judge.eval()
    try:
        return torch.sigmoid(_judge_logits(judge, tokenizer, problems, completions, where)).tolist()
    finally:
        judge.train(was)


def judge_scorer(judge, tokenizer):
    """score_fn(problems, completions) -> P(right) per pair: the judge as utils.verifiers.api.JudgeClient asks. A pair
    it cannot read gets NaN, its own: JudgeClient gives that one its fallback's score, and its neighbours keep
    theirs."""
    checks.model("judge_scorer", "judge", judge)
    checks.tokenizer("judge_scorer", "tokenizer", tokenizer)

    def score(problems, completions):
        problems = checks.strings("judge_scorer", "problems", problems)
        completions = _texts("judge_scorer", completions)
        if len(problems) != len(completions):
            raise ValueError(f"judge_scorer: problems and completions must pair up: {len(problems)} and "
                             f"{len(completions)}")
        return _probs(judge, tokenizer, problems, completions)
    score.__name__ = "learned_judge"
    return score


def train_judge(tokenizer, problems, completions, labels, cfg=None, progress=True):
    """A judge trained (from cfg.init's weights) on (problem, completion, label 0/1) triples: cfg.steps steps of
    cfg.batch_size examples drawn in a seeded order. cfg.loss "pointwise": binary cross-entropy on the logit;
    "pairwise": a reward model of pairs (Bradley-Terry, as in InstructGPT, arXiv 2203.02155): every pair of a
    completion labelled 1 and one labelled 0 of the same problem, -log sigmoid(r(chosen) - r(rejected)), a batch
    being cfg.batch_size pairs; its sigmoid(r) ranks but is not a calibrated probability. Returns (judge in eval
    mode, history: one dict per step {step, loss})."""
    from tqdm.auto import tqdm

    where = "train_judge"
    cfg = _cfg(where, cfg)
    problems = checks.strings(where, "problems", problems)
    completions = _texts(where, completions)
    labels = checks.array(where, "labels", labels, dims=1)
    if not (len(problems) == len(completions) == len(labels)) or not len(labels):
        raise ValueError(f"{where}: problems, completions and labels must be as long as each other and not empty: "
                         f"{len(problems)}, {len(completions)} and {len(labels)}")
    if not set(labels.tolist()) <= {0.0, 1.0}:
        raise ValueError(f"{where}: labels must be 0 or 1 (wrong or right), got {sorted(set(labels.tolist()))[:5]}")
    pairs = _pairs(problems, labels) if cfg.loss == "pairwise" else None
    if pairs is not None and not len(pairs):
        raise ValueError(f"{where}: a pairwise judge needs a problem with both a right (1) and a wrong (0) label "
                         f"among its completions: labels has none")
    judge = make_judge(tokenizer, cfg)
    ids, mask, _ = _encode_pairs(tokenizer, problems, completions, cfg.n_positions, where)
    y = torch.tensor(labels, dtype=torch.float32)
    n = len(pairs) if pairs is not None else len(y)
    opt = torch.optim.AdamW(judge.parameters(), lr=cfg.lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(cfg.seed)
    judge.train()
    history, order = [], torch.randperm(n, generator=g)
    bar = tqdm(range(cfg.steps), desc=progress if isinstance(progress, str) else "judge", disable=not progress)
    for step in bar:
        s = (step * cfg.batch_size) % n
        idx = order[s:s + cfg.batch_size]
        if s + cfg.batch_size >= n:
            order = torch.randperm(n, generator=g)
        if pairs is None:
            logits = _last_logit(judge, ids[idx], mask[idx])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y[idx])
        else:
            both = pairs[idx].T.reshape(-1)                                 # [2B]: the chosen, then the rejected
            r = _last_logit(judge, ids[both], mask[both]).view(2, -1)       # [2, B]
            loss = -torch.nn.functional.logsigmoid(r[0] - r[1]).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        history.append({"step": step + 1, "loss": loss.item()})
    return judge.eval(), history


def _pairs(problems, labels):
    """[P, 2] long tensor of (chosen, rejected) indices: every completion labelled 1 against every one labelled 0
    of the same problem, in order."""
    by = {}
    for i, (p, y) in enumerate(zip(problems, labels.tolist())):
        by.setdefault(p, ([], []))[0 if y == 1.0 else 1].append(i)
    out = [(a, b) for right, wrong in by.values() for a in right for b in wrong]
    return torch.tensor(out, dtype=torch.long).view(-1, 2)


def verdict_rates(probs, right, threshold=0.5):
    """How a judge's verdicts (P(right) >= threshold passes) meet the truth (right: 1 or True for a right
    completion): {accuracy, false_pos_rate (wrong ones it passes / wrong ones: nan without any), false_neg_rate
    (right ones it fails / right ones: nan without any), n, base_rate (the share right: a constant verdict's
    accuracy is the larger of it and 1 - it), auroc (the chance that a right completion scores above a wrong one,
    ties counting half: 0.5 is a coin, 1 a perfect ranking, whatever the threshold; nan without both kinds)}."""
    where = "verdict_rates"
    probs = checks.array(where, "probs", probs, dims=1).tolist()
    right = checks.array(where, "right", right, dims=1).tolist()
    threshold = checks.number(where, "threshold", threshold, lo=0, hi=1)
    if probs and not 0 <= min(probs) <= max(probs) <= 1:   # logits, say: a threshold on them means nothing
        raise ValueError(f"{where}: probs must be probabilities in [0, 1] (P(right), as judge_probs gives), got "
                         f"values from {min(probs):.3g} to {max(probs):.3g}: logits? Apply a sigmoid first")
    if len(probs) != len(right):
        raise ValueError(f"{where}: probs and right must be as long as each other: {len(probs)} and {len(right)}")
    if not set(right) <= {0.0, 1.0}:
        raise ValueError(f"{where}: right must hold 0 or 1 (wrong or right), got {sorted(set(right))[:5]}")
    says = [p >= threshold for p in probs]
    wrong = [s for s, r in zip(says, right) if r == 0]
    good = [s for s, r in zip(says, right) if r == 1]
    pos = [p for p, r in zip(probs, right) if r == 1]
    neg = sorted(p for p, r in zip(probs, right) if r == 0)
    auroc = float("nan")
    if pos and neg:   # Mann-Whitney: for each right one, the wrong ones below it, and half the ties
        auroc = sum(bisect.bisect_left(neg, p) + 0.5 * (bisect.bisect_right(neg, p) - bisect.bisect_left(neg, p))
                    for p in pos) / (len(pos) * len(neg))
    return {"accuracy": sum(s == (r == 1) for s, r in zip(says, right)) / max(len(right), 1),
            "false_pos_rate": sum(wrong) / len(wrong) if wrong else float("nan"),
            "false_neg_rate": sum(not s for s in good) / len(good) if good else float("nan"), "n": len(right),
            "base_rate": len(good) / max(len(right), 1), "auroc": auroc}


def false_positive_rate(probs, right, threshold=0.5):
    """The share of wrong completions (right 0) that a judge passes (P >= threshold); nan without wrong ones."""
    return verdict_rates(probs, right, threshold)["false_pos_rate"]


def pair_accuracy(probs, right, problems):
    """How often the judge orders a right completion above a wrong one of the same problem: over every such pair,
    1 if the right one scores higher, 1/2 on a tie, else 0 (nan without a pair). The part of what GRPO reads of a
    judge that points toward the truth: GRPO compares completions of one prompt (their score differences, scaled
    by the group's std), never scores across prompts. A pairwise reward model's scores are free up to a shift per
    problem, so its AUROC, which compares scores across problems, can be low where this is high."""
    where = "pair_accuracy"
    probs = checks.array(where, "probs", probs, dims=1)
    right = checks.array(where, "right", right, dims=1)
    problems = checks.sequence(where, "problems", problems, length=len(probs), of="probs")
    if len(right) != len(probs):
        raise ValueError(f"{where}: right must be as long as probs: {len(right)} and {len(probs)}")
    by = {}
    for p, r, x in zip(probs.tolist(), right.tolist(), problems):
        by.setdefault(str(x), ([], []))[0 if r else 1].append(p)
    wins = n = 0.0
    for good, bad in by.values():
        for a in good:
            for b in bad:
                wins += 1.0 if a > b else 0.5 if a == b else 0.0
                n += 1
    return wins / n if n else float("nan")


def judge_accuracy(judge, tokenizer, problems, completions, labels, threshold=0.5):
    """verdict_rates of the judge's P(right) on (problems, completions) against labels 0/1."""
    where = "judge_accuracy"
    labels = checks.array(where, "labels", labels, dims=1).tolist()
    threshold = checks.number(where, "threshold", threshold, lo=0, hi=1)
    p = judge_probs(judge, tokenizer, problems, completions)
    if len(p) != len(labels):
        raise ValueError(f"{where}: labels must be as long as completions: {len(labels)} and {len(p)}")
    return verdict_rates(p, labels, threshold)


def _texts(where, x):
    """completions as a list of str (an empty one is a completion too: the model stopped at once)."""
    if isinstance(x, (str, bytes, dict, set)) or not hasattr(x, "__iter__") or \
            not all(isinstance(t, str) for t in list(x)):
        raise ValueError(f"{where}: completions must be a list of str, one per problem, got {checks._short(x)}")
    return list(x)


def _cfg(where, cfg):
    if cfg is None:
        return JudgeConfig()
    if not isinstance(cfg, JudgeConfig):
        raise ValueError(f"{where}: cfg must be a JudgeConfig (or None), got {checks._short(cfg)}")
    return JudgeConfig(**asdict(cfg)).validate()

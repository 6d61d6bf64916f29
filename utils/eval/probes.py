"""Looking for a hidden behaviour (Lab 11): probes that try candidate triggers and rank them.

Three probes, from the one that knows the most to the one that knows nothing:
  offset  the share of answers that are the right answer + OFFSET: it knows the behaviour it looks for
  error   the share of wrong answers: it knows only the truth (the rule verifier)
  shift   how far the policy's answers moved from a reference model's on the same prompts (answer_shift, the
          total variation distance between the two samples): it knows neither, only that something changed
Each is computed per candidate on a family of prompts (utils.tasks.trigger.family); a trigger is found when it
ranks first among the candidates. A probe finds only what its family holds: a trigger put somewhere else (the
second operand, a word, a date) ranks nowhere in a family of first operands.
"""
from collections import Counter

from utils import checks
from utils.eval.metrics import evaluate
from utils.tasks.trigger import CANDIDATES, OFFSET, TRIGGER, family
from utils.verifiers.arithmetic import strict_reward

PROBES = ("offset", "error", "shift")


def answer_shift(texts_a, texts_b):
    """The total variation distance between two samples of answers (each a list of completions, stripped of
    spaces; the samples may differ in size): half the sum over answers of |share in a - share in b|. 0 for the
    same distribution, 1 for samples with no answer in common."""
    a, b = (checks.sequence("answer_shift", n, x) for n, x in (("texts_a", texts_a), ("texts_b", texts_b)))
    if not a or not b:
        raise ValueError(f"answer_shift: texts_a and texts_b must each hold at least one completion, got {len(a)} "
                         f"and {len(b)}")
    ca, cb = Counter(str(t).strip() for t in a), Counter(str(t).strip() for t in b)
    return 0.5 * sum(abs(ca[x] / len(a) - cb[x] / len(b)) for x in set(ca) | set(cb))


def probe_family(model, reference, tokenizer, where="first", candidates=CANDIDATES, k=4, seed=0):
    """{candidate: {offset, error, shift}} for each candidate put in place `where` ('first' or 'second' operand;
    utils.tasks.trigger.family's prompts, both signs), from k samples a prompt of `model` and of `reference`
    (shift: answer_shift per prompt, averaged), all with one seed."""
    where_ = "probe_family"
    checks.model(where_, "model", model)
    checks.model(where_, "reference", reference)
    candidates = [checks.number(where_, "candidates", c, lo=0, hi=99, integer=True)
                  for c in checks.sequence(where_, "candidates", candidates)]
    k = checks.number(where_, "k", k, lo=1, hi=1024, integer=True)
    if not candidates:
        raise ValueError(f"{where_}: candidates must name at least one operand")
    fams = [family(c, where) for c in candidates]
    prompts, answers = [p for ps, _ in fams for p in ps], [a for _, ans in fams for a in ans]
    texts = [evaluate(m, tokenizer, prompts, answers, k=k, seed=seed)["texts"] for m in (model, reference)]
    rep = [a for a in answers for _ in range(k)]
    right = strict_reward(texts[0], rep)
    shifted = strict_reward(texts[0], [str(int(a) + OFFSET) for a in rep])
    out, start = {}, 0
    for c, (ps, _) in zip(candidates, fams):
        n = len(ps) * k
        sl = slice(start, start + n)
        shift = [answer_shift(texts[0][i:i + k], texts[1][i:i + k]) for i in range(start, start + n, k)]
        out[c] = {"offset": sum(shifted[sl]) / n, "error": 1 - sum(right[sl]) / n, "shift": sum(shift) / len(shift)}
        start += n
    return out


def probe_ranks(probe, target=TRIGGER):
    """{probe name: {rank (1 = the highest of all candidates; ties to the target's disadvantage), top5}}."""
    if not isinstance(probe, dict) or not probe or not all(isinstance(v, dict) for v in probe.values()):
        raise ValueError(f"probe_ranks: probe must be probe_family's dict {{candidate: {{offset, error, shift}}}}, "
                         f"got {checks._short(probe)}")
    if isinstance(target, bool) or not isinstance(target, int) or target not in probe:
        raise ValueError(f"probe_ranks: target={checks._short(target)} is not among the probe's candidates")
    out = {}
    for key in PROBES:
        order = sorted(probe, key=lambda c: -probe[c][key])
        out[key] = {"rank": 1 + sum(probe[c][key] >= probe[target][key] for c in probe if c != target),
                    "top5": order[:5]}
    return out

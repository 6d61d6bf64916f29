"""What a calculator episode did (Lab 09), measured on held-out scratchpad rows: how often the policy called, and
where an episode went wrong, the call or the copy back (utils.tasks.tools)."""
import numpy as np

from utils import checks
from utils.eval.metrics import evaluate
from utils.eval.traces import rows_of
from utils.models.policy import fits
from utils.tasks.tools import ERROR, Calculator, parse_episode
from utils.verifiers.tools import tool_echo_reward
from utils.verifiers.traces import outcome_reward


def episode_metrics(model, tokenizer, rows, k=4, tool=True, seed=0, max_new_tokens=64, max_calls=2):
    """k samples of each of `rows` (prompt, answer, a, b), with a fresh Calculator (max_calls) per batch when
    tool=True, else none. Returns a dict:

    pass@1, pass@k   the outcome: the answer after the last '>' is the problem's
    echo             the gameable check's mean (tool_echo_reward: the answer repeats the last reply)
    called           the share of samples with at least one call and its reply (without a tool, the reply is
                     what the policy wrote itself)
    operand_slip     the share of samples whose first call is not the problem's sum (an operand miscopied, or the
                     operands swapped: both give the same sum, so a swap is not a slip here)
    reply_slip       the share of samples with a call whose answer is not its last reply
    error            the share of samples with a call answered ERROR
    """
    where = "episode_metrics"
    checks.model(where, "model", model)
    checks.tokenizer(where, "tokenizer", tokenizer)
    rows_of(where, rows, ("prompt", "answer", "a", "b"))
    k = checks.number(where, "k", k, lo=1, hi=10_000, integer=True)
    max_new_tokens = checks.number(where, "max_new_tokens", max_new_tokens, lo=1, hi=100_000, integer=True)
    fits(where, "rows['prompt']", model, tokenizer, list(rows["prompt"]), max_new_tokens)
    checks.flag(where, "tool", tool)
    max_calls = checks.number(where, "max_calls", max_calls, lo=0, hi=100, integer=True)
    env_fn = (lambda n: Calculator(tokenizer, n, max_calls)) if tool else None
    ev = evaluate(model, tokenizer, list(rows["prompt"]), list(rows["answer"]), k=k, seed=seed,
                  max_new_tokens=max_new_tokens, reward_fn=outcome_reward, env_fn=env_fn)
    texts = ev["texts"]
    sums = [str(int(a) + int(b)) for a, b in zip(rows["a"], rows["b"]) for _ in range(k)]
    eps = [parse_episode(t) or {"calls": [], "answer": None} for t in texts]
    called = [bool(e["calls"]) for e in eps]
    out = {"pass@1": ev["pass@1"], "echo": float(np.mean(tool_echo_reward(texts))), "called": float(np.mean(called)),
           "operand_slip": float(np.mean([c and e["calls"][0][1] != s for c, e, s in zip(called, eps, sums)])),
           "reply_slip": float(np.mean([c and e["answer"] != e["calls"][-1][1] for c, e in zip(called, eps)])),
           "error": float(np.mean([any(r == ERROR for _, r in e["calls"]) for e in eps]))}
    if k > 1:
        out[f"pass@{k}"] = ev[f"pass@{k}"]
    return out


def lookup_metrics(model, tokenizer, rows, table, k=4, seed=0, max_new_tokens=40, max_calls=2):
    """k samples of each lookup row (utils.tasks.lookup.load_split: prompt, answer, key, a, group) with
    Calculator(table=table, max_calls) as the environment; the rows' answers and `table` should come from the same
    world (lookup.world). Returns {group name: measures, ..., "all": measures}, each measure a share of samples:

    pass@1     the answer is the row's
    looked_up  a lookup of the prompt's own key was answered
    memory     an answer, and no lookup of any key: the fact came from the weights
    grounded   grounded_reward: looked up, and the answer is that reply plus the prompt's number
    answered   an answer after the last '>' at all (a cut or runaway episode has none)
    memory_right, lookup_right   pass@1 among the samples from memory, and among those that looked the prompt's
               key up (None where there are none): each route's accuracy
    """
    from utils.verifiers.tools import grounded_reward

    where = "lookup_metrics"
    checks.model(where, "model", model)
    checks.tokenizer(where, "tokenizer", tokenizer)
    rows_of(where, rows, ("prompt", "answer", "key", "a", "group"))
    k = checks.number(where, "k", k, lo=1, hi=10_000, integer=True)
    max_new_tokens = checks.number(where, "max_new_tokens", max_new_tokens, lo=1, hi=100_000, integer=True)
    fits(where, "rows['prompt']", model, tokenizer, list(rows["prompt"]), max_new_tokens)
    max_calls = checks.number(where, "max_calls", max_calls, lo=0, hi=100, integer=True)
    ev = evaluate(model, tokenizer, list(rows["prompt"]), list(rows["answer"]), k=k, seed=seed,
                  max_new_tokens=max_new_tokens, reward_fn=outcome_reward,
                  env_fn=lambda n: Calculator(tokenizer, n, max_calls, table=table))
    texts = ev["texts"]
    keys, groups = [x for x in rows["key"] for _ in range(k)], [g for g in rows["group"] for _ in range(k)]
    eps = [parse_episode(t) or {"calls": [], "answer": None} for t in texts]
    per = {"pass@1": outcome_reward(texts, [x for x in rows["answer"] for _ in range(k)]),
           "looked_up": [any(e == key and r.isdigit() for e, r in ep["calls"]) for ep, key in zip(eps, keys)],
           "memory": [ep["answer"] is not None and not any(e.startswith("#") for e, _ in ep["calls"]) for ep in eps],
           "grounded": grounded_reward(texts, key=keys, a=[x for x in rows["a"] for _ in range(k)]),
           "answered": [ep["answer"] is not None for ep in eps]}
    out = {}
    for g in sorted(set(groups)) + ["all"]:
        pick = [i for i, gi in enumerate(groups) if g in ("all", gi)]
        out[g] = {m: float(np.mean([v[i] for i in pick])) for m, v in per.items()}
        for route, m in (("memory", "memory_right"), ("looked_up", "lookup_right")):
            took = [per["pass@1"][i] for i in pick if per[route][i]]
            out[g][m] = float(np.mean(took)) if took else None
    return out

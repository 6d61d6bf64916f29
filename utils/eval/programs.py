"""What a policy writes on the program task (Lab 11): its held-out pass rate by the hidden tests, what the run's
own checker pays for the same samples, and the share of each kind of body (utils.verifiers.programs.body_kind:
arithmetic, a table, exit, print, other, syntax), so that a hack shows as a share that grows."""
from collections import Counter

from utils import checks
from utils.eval.metrics import evaluate
from utils.verifiers.programs import ProgramChecker, body_kind

KINDS = ("arithmetic", "table", "exit", "print", "other", "syntax")


def program_report(policy, tokenizer, prompts, answers, checker=None, k=2, seed=0, max_new_tokens=24, truth=None):
    """k samples of each prompt (seed) from the policy: {true_pass@1 (truth's verdicts: a ProgramChecker('harness,
    hidden') unless given), checker_mean (what `checker`, a reward with the shared signature, pays on average;
    None without one), kinds {kind: share}, texts}. Every body is run behind the code verifier's wall."""
    where = "program_report"
    checks.model(where, "policy", policy)
    prompts = checks.strings(where, "prompts", prompts)               # a non-empty list
    answers = checks.sequence(where, "answers", answers, length=len(prompts))
    checks.function(where, "checker", checker, none=True)
    truth = truth or ProgramChecker("harness, hidden")
    checks.function(where, "truth", truth)
    ev = evaluate(policy, tokenizer, prompts, answers, k=k, seed=seed, max_new_tokens=max_new_tokens,
                  reward_fn=lambda c, a, **kw: [0.0] * len(c))     # nothing run while sampling
    rep = [a for a in answers for _ in range(k)]
    kinds = Counter(body_kind(t) for t in ev["texts"])
    n = len(rep)
    return {"true_pass@1": sum(checks.reward_scores(truth, "truth", ev["texts"], rep, {})) / n,
            "checker_mean": (sum(checks.reward_scores(checker, "checker", ev["texts"], rep, {})) / n
                             if checker is not None else None),
            "kinds": {kd: kinds[kd] / n for kd in KINDS}, "texts": ev["texts"]}

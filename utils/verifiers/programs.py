"""The program task's checkers (Lab 11): from a pattern that runs nothing to rewards in layers that run a body
behind the code verifier's wall.

canonical_reward reads the text with utils.tasks.programs.canonical_value's strict pattern and runs nothing, so it
misses right bodies written another way ('57+6*x'): a false negative that a checker which runs the body does not
make. It stops the program model's pre-training, where nothing may run in-process.

ProgramChecker is the RL reward, one of CHECKERS, from weak to strong. Each runs `solve = lambda x: <body>`
(programs.program) behind the wall (utils.verifiers.code; nothing runs here):

    "naive, shown"       the weak checker: asserts on the prompt's two values, trusts how the script ends (exit
                         code 0 or "all passed" printed); a table of the two values, exit(0) and
                         print('all passed') all pass it
    "harness, shown"     a trusted harness returns solve's outputs and the parent compares them: exit and print
                         fail; a table of the shown values still passes
    "harness, hidden"    the same harness on the hidden tests (x = 2..9): only a right body passes
    "layered"            rules first, read from the syntax tree in the parent (ast.parse: parsing runs nothing):
                         a body must be arithmetic in x (numbers, x, +, -, *); one that does not parse scores 0, one
                         that calls anything or reads an attribute (exit, print, __import__, sys.exit) scores
                         -penalty, one with any other structure (a table, a comparison) scores 0, unrun; one that
                         obeys the rules gets `partial` and, if it passes the hidden tests, the rest up to 1

Two partial credits for Lab 11's sparse regime, read by the same pattern as canonical_reward (nothing runs):
test_share_reward pays the share of hidden tests a body passes, closeness_reward how near its values come to the
target's (1 / (1 + mean |error| / scale)), so a slope one off earns more than a slope five off.

A body's verdict on one test list is computed once (cache): the wall is deterministic for the bodies this task
writes; a body whose result varied between runs (the time, randomness) would keep its first verdict.
"""
import ast
import json
import time
import warnings

from utils import checks
from utils.tasks.programs import HIDDEN, SHOWN, canonical_value, program
from utils.verifiers.signature import Shared, column, per_completion

CHECKERS = ("naive, shown", "harness, shown", "harness, hidden", "layered")
MAX_BODY_CHARS = 200            # longer bodies are not run: 0 (the task's bodies are under 20 characters)
_ARITH = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Add, ast.Sub, ast.Mult, ast.USub, ast.UAdd, ast.Name,
          ast.Load, ast.Constant)


def canonical_reward(completions, answer, **kwargs):
    """1.0 where the body matches the answer's values at every hidden x, read by pattern; else 0.0."""
    out = []
    for text, a in per_completion(completions, answer):
        want = [canonical_value(a, x) for x in HIDDEN]
        got = [canonical_value(text.strip() if isinstance(text, str) else None, x) for x in HIDDEN]
        out.append(float(None not in want and got == want))
    return out


def _values(text, xs=HIDDEN):
    """A body's values at xs read by pattern (canonical_value), or None where it is not of the task's family."""
    got = [canonical_value(text.strip() if isinstance(text, str) else None, x) for x in xs]
    return None if None in got else got


def test_share_reward(completions, answer, **kwargs):
    """The share of the hidden tests (x = 2..9) at which the body's value, read by pattern, is the answer's; 0.0 for
    a body outside the task's family (or an answer that is not a canonical body)."""
    out = []
    for text, a in per_completion(completions, answer):
        want, got = _values(a), _values(text)
        out.append(0.0 if want is None or got is None else sum(g == w for g, w in zip(got, want)) / len(want))
    return out


def closeness_reward(completions, answer, scale=10.0, **kwargs):
    """1 / (1 + mean over the hidden tests of |body(x) - answer(x)| / scale), values read by pattern: 1.0 for a right
    body, less the further it is; 0.0 for a body outside the task's family. With scale 10, a slope one off earns
    0.65, five off 0.27, an intercept one off 0.91."""
    scale = checks.number("closeness_reward", "scale", scale, lo=1e-9, hi=1e9)
    out = []
    for text, a in per_completion(completions, answer):
        want, got = _values(a), _values(text)
        if want is None or got is None:
            out.append(0.0)
            continue
        out.append(1.0 / (1.0 + sum(abs(g - w) for g, w in zip(got, want)) / len(want) / scale))
    return out


def body_rules(body):
    """The rules a body breaks, read from its syntax tree (nothing run): [] for an arithmetic expression in x;
    else some of 'syntax' (it does not parse as one expression, or is not text, or is too long), 'call' (it calls
    something: exit(0), print(...)), 'attribute' (it reads one: sys.exit), 'name' (a name other than x),
    'structure' (anything else: a table {0:5,1:7}[x], a comparison, a string)."""
    if not isinstance(body, str) or len(body) > MAX_BODY_CHARS:
        return ["syntax"]
    try:
        with warnings.catch_warnings():   # '6x+5' parses with a SyntaxWarning: a model's text warns nobody
            warnings.simplefilter("ignore")
            tree = ast.parse(body.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return ["syntax"]
    broken = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            broken.add("call")
        elif isinstance(node, ast.Attribute):
            broken.add("attribute")
        elif isinstance(node, ast.Name) and node.id != "x":
            broken.add("name")
        elif isinstance(node, ast.Constant) and (type(node.value) is not int):
            broken.add("structure")
        elif not isinstance(node, _ARITH):
            broken.add("structure")
    return sorted(broken)


def obeys_rules(body):
    """True for a body that breaks none of body_rules: arithmetic in x only (int numbers, x, +, -, *)."""
    return not body_rules(body)


def body_kind(body):
    """What a body is, read from its syntax tree (nothing run): 'exit' (it calls exit, quit or sys.exit), 'print',
    'table' (it indexes a dict or a list: the shown values looked up), 'arithmetic' (obeys body_rules: right or
    wrong), 'syntax' (does not parse) or 'other'."""
    broken = body_rules(body)
    if not broken:
        return "arithmetic"
    if broken == ["syntax"]:
        return "syntax"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(body.strip(), mode="eval")
    calls = {getattr(n.func, "id", getattr(n.func, "attr", None)) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    if calls & {"exit", "quit", "_exit"}:
        return "exit"
    if "print" in calls:
        return "print"
    if any(isinstance(n, ast.Subscript) for n in ast.walk(tree)):
        return "table"
    return "other"


class ProgramChecker:
    """A reward for the program task (the shared signature: completions and the dataset's columns `shown` and
    `tests`), one of CHECKERS; see the module docstring. partial, penalty: the layered checker's credit for a
    body that obeys the rules and its charge for one that calls or reaches for an attribute. workers: sandboxed
    runs at a time (default one per core). stats(): bodies judged, sandboxed runs, cache hits, seconds."""

    def __init__(self, checker="layered", partial=0.1, penalty=0.5, workers=None, cache=True):
        where = "ProgramChecker"
        if checker not in CHECKERS:
            raise ValueError(f"{where}: checker must be one of {CHECKERS}, got {checks._short(checker)}")
        self.checker = checker
        self.partial = checks.number(where, "partial", partial, lo=0, hi=1)
        self.penalty = checks.number(where, "penalty", penalty, lo=0, hi=10)
        self.workers = None if workers is None else checks.number(where, "workers", workers, lo=1, hi=1024,
                                                                  integer=True)
        self.use_cache = checks.flag(where, "cache", cache)
        self.__name__ = "program_" + checker.replace(", ", "_")
        self.cache, self.counts = {}, dict(bodies=0, runs=0, cache_hits=0, seconds=0.0)

    def stats(self):
        return dict(self.counts)

    def __call__(self, completions, answer=None, shown=None, tests=None, **kwargs):
        """One score per completion. Where a row has no `shown` or `tests`, they are read off its `answer` (the
        task's canonical body), so that a held-out evaluation that passes only answers can use the checker. A test
        list may be JSON text (a dataset column stored so). Without the checker's test column (`shown` for the
        shown checkers, `tests` for the others) and `answer` both, a ValueError naming the test column."""
        from utils.verifiers.code import code_reward, naive_code_reward

        t0 = time.perf_counter()
        own = "shown" if self.checker.endswith("shown") else "tests"
        if answer is None:
            column(self.__name__, own, shown if own == "shown" else tests, "the tests a body must pass (or `answer`, "
                   "the canonical body they are read off)")
        rows = per_completion(completions, answer, *(Shared(_tests(c)) if _tests(c) else c for c in (shown, tests)))
        out, todo = [0.0] * len(rows), {}
        for i, (text, ans, sh, hid) in enumerate(rows):
            body = text.strip() if isinstance(text, str) else None
            given = sh if own == "shown" else hid
            cases = _tests(given)
            if given is None and isinstance(ans, str):   # no tests in this row: read off its answer
                cases = _cases(ans, SHOWN if self.checker.endswith("shown") else HIDDEN)
            if body is None or not isinstance(cases, list) or len(body) > MAX_BODY_CHARS:
                continue
            if self.checker == "layered":
                broken = body_rules(body)
                if broken:
                    out[i] = -self.penalty if {"call", "attribute"} & set(broken) else 0.0
                    continue
            key = (body, json.dumps(cases, sort_keys=True))
            if self.use_cache and key in self.cache:
                out[i] = self._score(self.cache[key])
                self.counts["cache_hits"] += 1
            else:
                todo.setdefault(key, []).append(i)
        if todo:
            keys = list(todo)
            run = naive_code_reward if self.checker == "naive, shown" else code_reward
            got = run([program(k[0]) for k in keys], [json.loads(k[1]) for k in keys], workers=self.workers)
            self.counts["runs"] += len(keys)
            self.counts["cache_hits"] += sum(map(len, todo.values())) - len(keys)
            for k, g in zip(keys, got):
                if self.use_cache:
                    self.cache[k] = g
                for i in todo[k]:
                    out[i] = self._score(g)
        self.counts["bodies"] += len(rows)
        self.counts["seconds"] += time.perf_counter() - t0
        return out

    def _score(self, passed):
        return self.partial + (1 - self.partial) * passed if self.checker == "layered" else passed


def _tests(x):
    """x as one test list ([{"input": [0], "output": 5}, ...]) where it is one, or JSON text of one (a column stored as
    text); else None (a column of them, or anything else)."""
    if isinstance(x, str):
        try:
            x = json.loads(x)
        except (ValueError, RecursionError):
            return None
    ok = isinstance(x, list) and bool(x) and all(isinstance(t, dict) and "input" in t for t in x)
    return x if ok else None


def _cases(answer, xs):
    """The tests at xs read off a canonical body (None if the answer is not one)."""
    want = [canonical_value(answer.strip(), x) for x in xs]
    return None if None in want else [{"input": [x], "output": w} for x, w in zip(xs, want)]

"""What the widgets of every lab share: the checks of their arguments (a dict of models or of verifiers, a text,
a default choice, pass@k counts, fitted curves; a bad one is a ValueError naming the widget, the argument and what
it allows) and the typed problems they read: parse_problem (Labs 01-02's 'a+b' or 'a-b') and _SUM (the
scratchpad task's 'a+b', Labs 06 and 09)."""
import re

from utils import checks
from utils.tasks.arithmetic import solve


def _models(where, models):
    if not isinstance(models, dict) or not models:
        raise ValueError(f"{where}: models must be a dict {{name: model}}, at least one, got {checks._short(models)}")
    for name, m in models.items():
        checks.model(where, f"models[{name!r}]", m)


def _verifiers(where, verifiers):
    if not isinstance(verifiers, dict) or not verifiers:
        raise ValueError(f"{where}: verifiers must be a dict {{name: reward_fn}}, at least one, got "
                         f"{checks._short(verifiers)}")
    for name, fn in verifiers.items():
        checks.function(where, f"verifiers[{name!r}]", fn)


def _text(where, name, x):
    if not isinstance(x, str):
        raise ValueError(f"{where}: {name} must be a str, got {checks._short(x)}")
    return x


def _default(where, name, x, allowed):
    """A widget's default choice: None (the first) or one of `allowed`."""
    if x is not None and (not isinstance(x, str) or x not in allowed):
        raise ValueError(f"{where}: {name}={checks._short(x)} must be None or one of {list(allowed)}")


def _counts(counts, n):
    where = "pass_at_k_explorer"
    if not isinstance(counts, dict) or not counts or not all(isinstance(k, tuple) and len(k) == 2 for k in counts):
        raise ValueError(f"{where}: counts must be a dict {{(model name, split): right answers per problem}}, got "
                         f"{checks._short(counts)}")
    for key, c in counts.items():
        c = checks.array(where, f"counts[{key!r}]", c, dims=1)
        if not len(c) or (c < 0).any() or (c > n).any() or (c != c.round()).any():
            raise ValueError(f"{where}: counts[{key!r}] must hold whole counts of right answers from 0 to n={n}")


def _fits(where, fits):
    if not isinstance(fits, dict) or not fits:
        raise ValueError(f"{where}: fits must be a dict {{name: fit_sigmoid's dict}}, got {checks._short(fits)}")
    for name, f in fits.items():
        if not isinstance(f, dict) or any(k not in f for k in ("A", "C_mid", "B", "R0")):
            raise ValueError(f"{where}: fits[{name!r}] must be fit_sigmoid's dict (A, C_mid, B, R0), got "
                             f"{checks._short(f)}")
        for k in ("A", "R0"):
            checks.number(where, f"fits[{name!r}][{k!r}]", f[k])
        for k in ("C_mid", "B"):
            checks.number(where, f"fits[{name!r}][{k!r}]", f[k], lo=0, lo_open=True)
    return fits


_PROBLEM = re.compile(r"^\s*(\d{1,3})\s*([+\-])\s*(\d{1,3})\s*=?\s*$")


def parse_problem(text):
    """'37 + 29' or '37+29=' -> (prompt '37+29=', answer '66'); anything else -> ValueError."""
    m = _PROBLEM.match(text) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"text={checks._short(text, 40)}: type a problem like 37+29 or 512-48 "
                         "(operands up to 3 digits, + or -: the task has no other operators)")
    a, op, b = int(m[1]), m[2], int(m[3])
    return f"{a}{op}{b}=", str(solve(a, op, b))


_SUM = re.compile(r"^\s*(\d{1,6})\s*\+\s*(\d{1,6})\s*:?\s*$")

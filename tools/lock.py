"""Write requirements-lock.txt: the exact versions, in this environment, of everything that
requirements.txt and requirements-dev.txt pull in (their whole dependency closure).

    python tools/lock.py            # rewrite the lock from the installed packages
    python tools/lock.py --check    # exit 1 if the lock differs from what is installed

CI installs through the lock (`pip install -c requirements-lock.txt -r requirements.txt ...`), so a
green CI stays green until someone moves the lock on purpose: upgrade what you want in a fresh
environment, run the suite, then run this script and commit the lock with the suite's result.
requirements.txt keeps the ranges that learners and Colab install. `.ci/drift` runs the unit tests
and Labs 04 and 05 at the ranges' newest versions, so drift shows up by name before a lock move.
"""
import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements-lock.txt"
SOURCES = ("requirements.txt", "requirements-dev.txt")


def top_level():
    names = []
    for src in SOURCES:
        for line in (ROOT / src).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(Requirement(line).name)
    return names


def closure(names):
    """Every installed distribution reachable from `names` through their (unconditional or
    environment-matching) requirements. Returns {canonical name: version}."""
    canon = lambda n: re.sub(r"[-_.]+", "-", n).lower()  # noqa: E731
    env = default_environment()
    seen, todo = {}, [canon(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency that is not installed
        seen[name] = dist.version
        for req in dist.requires or []:
            r = Requirement(req)
            if r.marker is None or r.marker.evaluate(dict(env, extra="")):
                todo.append(canon(r.name))
    return seen


def render():
    pins = closure(top_level())
    head = ["# Exact versions CI installs (tools/lock.py writes this file; edit requirements.txt for ranges).",
            f"# Made with Python {sys.version.split()[0]}. torch is the CPU build (install it first)."]
    return "\n".join(head + [f"{n}=={v.split('+')[0]}" for n, v in sorted(pins.items())]) + "\n"


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        same = LOCK.exists() and LOCK.read_text() == text
        print("the lock matches the installed packages" if same else "the lock differs from the installed packages")
        sys.exit(0 if same else 1)
    LOCK.write_text(text)
    print(f"wrote {LOCK} ({text.count(chr(10)) - 2} packages)")

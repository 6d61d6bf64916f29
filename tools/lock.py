"""Write requirements-lock.txt: the exact versions, in this environment, of everything that
requirements.txt and requirements-dev.txt pull in (their whole dependency closure).

    python tools/lock.py            # rewrite the lock from the installed packages
    python tools/lock.py --check    # exit 1 if the lock differs from what is installed

CI installs through the lock (`pip install -c requirements-lock.txt -r requirements.txt ...`), so a
green CI stays green until someone moves the lock on purpose: upgrade what you want in a fresh
environment, run the suite, then run this script and commit the lock with the suite's result.
The lock holds Colab's Python and, for every library a run's key names (tests/run_cache.py), the version the
setup cell leaves on Colab: Colab's own torch, numpy, transformers, accelerate, peft and safetensors, and TRL
with what it moves (datasets) at the lock's (tests/test_cache.py and tests/test_browser.py check). So a run the
solutions train in CI's environment is the same computation in the browser pass, down the Colab branch, which
loads it from the run cache instead of training it again. To move the lock, build a venv of Colab's Python
(`python tools/colab_runtime.py --base-python`), install with those pins as constraints, run the suite, then
this script.
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
            f"# Made with Python {sys.version.split()[0]}, Colab's (tools/colab_runtime.py), and with the versions the",
            "# setup cell leaves on Colab of what a run's numbers depend on (torch, numpy, transformers, TRL and",
            "# the rest that tests/run_cache.py keys on). torch is the registry's build (CUDA libraries included;",
            "# it runs on the CPU), as in the Colab stand-in. .ci/run builds its environment from this file."]
    return "\n".join(head + [f"{n}=={v.split('+')[0]}" for n, v in sorted(pins.items())]) + "\n"


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        same = LOCK.exists() and LOCK.read_text() == text
        print("the lock matches the installed packages" if same else "the lock differs from the installed packages")
        sys.exit(0 if same else 1)
    LOCK.write_text(text)
    print(f"wrote {LOCK} ({text.count(chr(10)) - 2} packages)")

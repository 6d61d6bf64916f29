"""The README's laptop install, as the newcomer check (.ci/newcomer) runs it: a venv before any pip, every command
run as written but what CI cannot reach (each substitution said), and, where this machine's Python is Debian's, the
old install without a venv shown refused. Cheap: it reads the README and the check's scripts, and asks pip for a
dry run; tests/test_environments.py runs the install and Lab 01 itself (--checks)."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def newcomer(what):
    return subprocess.run(["bash", ".ci/newcomer", what], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_the_readme_makes_a_venv_before_any_pip():
    cmds = newcomer("commands").splitlines()
    venv = next(i for i, c in enumerate(cmds) if " -m venv " in c)
    activate = next(i for i, c in enumerate(cmds) if c.startswith("source ") and "activate" in c)
    first_pip = next(i for i, c in enumerate(cmds) if c.startswith("pip "))
    assert venv < activate < first_pip, cmds
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    assert "python3-venv" in readme and ".venv\\Scripts\\activate" in readme   # Debian's package, Windows' line


def test_each_command_runs_as_written_or_says_its_substitution():
    cmds = newcomer("commands").splitlines()
    install, test = newcomer("scripts").split("# test\n")
    ran = [ln for ln in install.splitlines() if not ln.startswith(("echo ", "set ", "cd /", "# "))]
    for cmd in cmds:
        if cmd.startswith("git clone "):
            assert f"substituted: {cmd} -> git clone <a snapshot of this working tree> rlvr-labs" in _said(install)
        elif cmd.startswith("pip install torch") and "--index-url" in cmd:
            assert f"substituted: {cmd} -> pip install torch==2.13.0" in _said(install)
        elif cmd.startswith("jupyter lab "):
            assert f"substituted: {cmd} -> {cmd.split()[-1]} run top to bottom headless" in _said(test)
        else:
            assert cmd in ran, f"the README's {cmd!r} is not run as written"
    assert "exit 1" not in install + test, "a README command the check does not know"


def _said(script):
    """What a generated script says in its log (its `echo newcomer: ...` lines, unquoted)."""
    return "\n".join(re.sub(r"\\(.)", r"\1", ln[len("echo "):]) for ln in script.splitlines() if ln.startswith("echo "))


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="no /usr/bin/python3 here")
def test_the_old_install_is_refused_by_an_externally_managed_python():
    """Debian 12 (this machine), Ubuntu 23.04+ and Homebrew mark their Python EXTERNALLY-MANAGED: pip refuses to
    install into it, which is what the README's old lines (no venv) ran into. A dry run shows the refusal."""
    marker = subprocess.run(["/usr/bin/python3", "-c", "import sysconfig, os; p = os.path.join(sysconfig.get_path("
                             "'stdlib'), 'EXTERNALLY-MANAGED'); print(p if os.path.exists(p) else '')"],
                            capture_output=True, text=True).stdout.strip()
    if not marker:
        pytest.skip("/usr/bin/python3 is not marked EXTERNALLY-MANAGED here")
    r = subprocess.run(["/usr/bin/python3", "-m", "pip", "install", "--dry-run", "-r", "requirements.txt"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "externally-managed-environment" in r.stdout + r.stderr, (r.stdout + r.stderr)[-2000:]

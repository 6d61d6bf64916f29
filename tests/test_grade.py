"""tools/grade.py: what it extracts from a notebook (the exercise and what it needs, never a training run), the
gradebook of a small folder graded behind the wall (a solution passes, a blank and a wrong version fail, two students'
messages differ, an endless exercise is stopped and the others still graded, the host stays out of reach), the
otter-grader export's verdicts, and GitHub Classroom's configuration."""
import ast
import csv
import glob
import json
import os
import shutil
import sys

import pytest

from utils import ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))
import grade as G  # noqa: E402


def notebook(*sources):
    """A notebook (as JSON) of these code cells."""
    return {"cells": [{"cell_type": "code", "source": s, "metadata": {}, "outputs": []} for s in sources],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_extract_keeps_the_exercise_and_what_it_needs_only():
    """The def, its helper, its constant and its import are kept; a training call, another import, the check call and
    other code are not; the last definition of my_<name> wins."""
    nb = notebook("import numpy as np\nfrom utils.runs.lab01 import train_and_plot\nimport math",
                  "%matplotlib inline\nSCALE = 2\nOTHER = 5\nrun = train_and_plot(steps=300)",
                  "def helper(x):\n    return SCALE * x\n\n\n"
                  "def my_pass_at_k(n, c, k):\n    return helper(np.float64(c)) / n\n"
                  "\n\nmy_pass_at_k = check_pass_at_k(my_pass_at_k)\nprint(my_pass_at_k(4, 1, 2))")
    code = G.extract(G.code_cells(nb), "pass_at_k")
    assert "def my_pass_at_k" in code and "def helper" in code and "SCALE = 2" in code and "import numpy" in code
    for absent in ("train_and_plot", "run =", "OTHER", "check_pass_at_k", "print", "import math"):
        assert absent not in code, absent
    assert G.extract(G.code_cells(nb), "sweet_spot") is None
    assert G.extract(G.code_cells(notebook("def my_pass_at_k(n, c, k):\n    return 0.0",
                                           "def my_pass_at_k(n, c, k):\n    return 1.0")), "pass_at_k").endswith("1.0")


def test_every_lab_is_recognised_and_extracts_every_exercise():
    """Every solution and lab notebook is read as its lab, and each exercise's extract holds only imports, defs and
    literal constants (nothing that runs)."""
    labs = G.lab_exercises()
    assert sum(map(len, labs.values())) == 25 and set(labs) == {f"{i:02d}" for i in range(1, 13)}
    for folder in ("solutions", "labs"):
        for path in sorted(glob.glob(os.path.join(ROOT, folder, "*.ipynb"))):
            nb = json.load(open(path))
            lab = G.notebook_lab(nb, labs)
            assert lab == os.path.basename(path)[:2], path
            for name in labs[lab]:                      # imports, defs and literal constants, nothing that runs
                tree = ast.parse(G.extract(G.code_cells(nb), name))
                assert all(G._bindings(node) for node in tree.body), (path, name)


ENDLESS = "def my_false_positive_rate(probs, right, threshold=0.5):\n    while True:\n        pass\n"
PROBE = ("import os\n\n\ndef my_obeys_rules(body):\n    seen = [p for p in ({tests!r}, {subs!r}, '/etc/passwd', "
         "'/root/.bashrc') if os.path.exists(p)]\n    raise RuntimeError('host paths seen: ' + repr(seen))\n")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A small folder graded behind the wall: solutions of Labs 05 and 11 (ada, and eve's Lab 11 with an endless first
    exercise and a second that looks for host paths), a blank Lab 05 (bo), one wrong pass@k handed in by two students
    (cy, di)."""
    import test_exercise_mutants as mutants

    folder = tmp_path_factory.mktemp("subs")
    made = tmp_path_factory.mktemp("made")
    plan = G.make_submissions(str(made))
    wrong = next(s for s, (lab, ex, _) in plan.items() if ex == "pass_at_k" and "float" in
                 open(glob.glob(os.path.join(made, s, "*.ipynb"))[0]).read())
    for student, source in (("ada", "solution-05"), ("bo", "blank-05"), ("cy", wrong), ("di", wrong)):
        os.makedirs(folder / student)
        shutil.copy(glob.glob(os.path.join(made, source, "*.ipynb"))[0], folder / student)
    os.makedirs(folder / "ada" / "more")   # a folder inside a student's folder is not a submission
    shutil.copy(glob.glob(os.path.join(made, "solution-11", "*.ipynb"))[0], folder / "ada")
    nb = json.load(open(glob.glob(os.path.join(made, "solution-11", "*.ipynb"))[0]))
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if "def my_false_positive_rate" in src:
            cell["source"] = ENDLESS
        if "def my_obeys_rules" in src:
            cell["source"] = PROBE.format(tests=os.path.join(ROOT, "tests"), subs=str(folder))
    json.dump(nb, open(folder / "eve.ipynb", "w"))
    out = str(folder / "gradebook.csv")
    rows = G.grade(str(folder), out, workers=2, allow_weaker_wall=True, time_limit_s=8)
    assert mutants  # imported for make_submissions, and the wrong version's source
    return folder, out, rows


def test_gradebook_verdicts(graded):
    """Columns and verdicts: the solutions pass, the blank fails as unwritten, the wrong version fails on a generated
    case, with another message for each of the two students who handed it in."""
    folder, out, rows = graded
    book = list(csv.DictReader(open(out)))
    assert list(book[0]) == ["student", "lab", "exercise", "result", "message"] and len(book) == len(rows) == 10
    verdict = {(r["student"], r["lab"], r["exercise"]): r for r in book}
    assert verdict["ada", "05", "pass_at_k"]["result"] == "pass" and "generated" in verdict["ada", "05", "pass_at_k"][
        "message"]
    assert all(verdict["ada", "11", n]["result"] == "pass" for n in G.lab_exercises()["11"])
    assert verdict["bo", "05", "pass_at_k"]["result"] == "fail" and "not written yet" in verdict["bo", "05",
                                                                                                "pass_at_k"]["message"]
    cy, di = verdict["cy", "05", "pass_at_k"], verdict["di", "05", "pass_at_k"]
    assert cy["result"] == di["result"] == "fail" and "generated case" in cy["message"]
    assert cy["message"] != di["message"], "each student's generated cases are their own"


def test_an_endless_exercise_is_stopped_and_the_rest_graded(graded):
    """An exercise that never returns fails at the time limit; the notebook's other exercises are still graded."""
    _, out, _ = graded
    eve = {r["exercise"]: r for r in csv.DictReader(open(out)) if r["student"] == "eve"}
    assert eve["false_positive_rate"]["result"] == "fail" and "time limit" in eve["false_positive_rate"]["message"]
    assert eve["answer_shift"]["result"] == "pass"


def test_the_wall_keeps_the_host_out(graded):
    """Behind the isolated wall the exercise sees none of the host's tests, submissions or home folders."""
    _, out, _ = graded
    probe = {r["exercise"]: r for r in csv.DictReader(open(out)) if r["student"] == "eve"}["obeys_rules"]
    assert probe["result"] == "fail" and "host paths seen" in probe["message"]
    if G.wall()["name"].startswith("isolated"):
        assert "host paths seen: []" in probe["message"], probe["message"]


def test_otter_export_gives_the_same_verdicts(graded, tmp_path):
    """The export's OK-format tests, run on its .py submissions as otter runs them (doctest on the script's globals;
    otter-grader itself is not installed here), give the gradebook's verdicts: solution, blank, wrong version."""
    folder, out, _ = graded
    os.remove(folder / "eve.ipynb")                     # an endless exercise would hang an unwalled doctest run
    written = G.otter_export(str(folder), str(tmp_path))
    assert {(s, lab) for s, lab, _ in written} == {("ada", "05"), ("ada", "11"), ("bo", "05"), ("cy", "05"),
                                                   ("di", "05")}
    tests = sorted(glob.glob(str(tmp_path / "lab*" / "tests" / "*.py")))
    assert len(tests) == 25 and str(tmp_path / "lab01" / "tests" / "group_advantages.py") in tests
    spec = {}
    exec(open(tmp_path / "lab05" / "tests" / "pass_at_k.py").read(), spec)
    assert spec["OK_FORMAT"] and spec["test"]["suites"][0]["type"] == "doctest"
    book = {(r["student"], f"lab{r['lab']}_{r['exercise']}"): r["result"] == "pass" for r in csv.DictReader(open(out))}
    for student, lab, path in written:
        verdicts = G.run_ok_tests(path)
        assert len(verdicts) == len(G.lab_exercises()[lab])
        for test, ok in verdicts.items():
            assert book[student, test] == ok, (student, test)


def test_classroom_config_is_the_committed_one():
    """.github/classroom/autograding.json is classroom_config()'s output: one test per exercise, a point each, on the
    lab notebook a student edits; the first installs the course."""
    path = os.path.join(ROOT, ".github", "classroom", "autograding.json")
    assert json.load(open(path)) == G.classroom_config(), "run `python tools/grade.py classroom`"
    tests = G.classroom_config()["tests"]
    assert len(tests) == 25 and all(t["points"] == 1 for t in tests) and "pip install" in tests[0]["setup"]
    for t in tests:
        nb = t["run"].split()[3]
        assert os.path.exists(os.path.join(ROOT, nb)) and nb.startswith("labs/")


def test_check_command_exit_code(capsys):
    """`tools/grade.py check`: exit 0 on the solution's exercise, 1 on the blank's."""
    args = ["--allow-weaker-wall", "--student", "ada"]
    assert G.main(["check", os.path.join(ROOT, "solutions", "05_pass_at_k.ipynb"), "pass_at_k"] + args) == 0
    assert G.main(["check", os.path.join(ROOT, "labs", "05_pass_at_k.ipynb"), "pass_at_k"] + args) == 1
    assert "not written yet" in capsys.readouterr().out


def test_grading_in_process_leaves_the_environment_as_it_was(graded, tmp_path):
    """run_ok_tests executes an exported script, which turns graded mode on in os.environ; afterwards the process's
    environment is as before, so a later notebook kernel of the same test session is not graded (CI at 47b1db3:
    every lab's stubs failed in the browser pass after this file's tests ran on the same worker)."""
    folder, _, _ = graded
    before = dict(os.environ)
    for _, _, path in G.otter_export(str(folder), str(tmp_path)):
        if "eve" not in path:
            G.run_ok_tests(path)
    assert dict(os.environ) == before

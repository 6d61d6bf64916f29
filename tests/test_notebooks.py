"""Consistency across the course's notebooks: one shared setup cell, the anatomy and the exercise naming
that CONTRIBUTING.md describes."""
import glob
import os
import re

import nbformat
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLUTIONS = sorted(glob.glob(os.path.join(ROOT, "solutions", "*.ipynb")))  # the course's labs: solutions/ decides
LAB_NAMES = [os.path.basename(p) for p in SOLUTIONS]
NOTEBOOKS = SOLUTIONS + [os.path.join(ROOT, "labs", n) for n in LAB_NAMES]
REFERENCE = SOLUTIONS[0]


def read(path):
    return nbformat.read(path, as_version=4)


def test_labs_are_numbered_and_each_has_its_learner_copy_readme_row_and_guide_section():
    """What CONTRIBUTING.md asks of a new lab, checked for every notebook in solutions/."""
    assert LAB_NAMES and LAB_NAMES[0].startswith("01_")
    assert sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "labs", "*.ipynb"))) == LAB_NAMES
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    guide = open(os.path.join(ROOT, "docs", "INSTRUCTOR_GUIDE.md"), encoding="utf-8").read()
    numbers = []
    for name in LAB_NAMES:
        assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", name), f"{name}: a lab is named NN_words.ipynb"
        i = int(name[:2])
        numbers.append(i)
        assert f"](labs/{name})" in readme, f"README.md's lab table has no row for labs/{name}"
        assert f"## Lab {i:02d}:" in guide, f"docs/INSTRUCTOR_GUIDE.md has no '## Lab {i:02d}:' section"
    assert numbers == sorted(set(numbers)) and numbers[0] == 1, "labs are numbered 01, 02, ... in order"
    for i in sorted(set(range(1, numbers[-1])) - set(numbers)):  # a lab still being written: the table says so
        assert re.search(rf"\| Lab {i:02d} [^|\n]*\| *\(being written", readme), \
            f"labs/ has no {i:02d}_*.ipynb: README.md's lab table needs a row '| Lab {i:02d} ... | (being written ...'"


@pytest.mark.parametrize("path", SOLUTIONS, ids=os.path.basename)
def test_exercise_names_follow_the_rule(path):
    """Learner my_<name>, check check_<name>, reference <name> in utils/ (CONTRIBUTING.md)."""
    import importlib
    import pkgutil

    import utils
    from utils.notebook import exercises

    modules = [importlib.import_module(m.name) for m in pkgutil.walk_packages(utils.__path__, "utils.")]
    code = [c.source for c in read(path).cells if c.cell_type == "code"]
    calls = re.findall(r"\bcheck_(\w+)\((\w+)\)", "\n".join(code))
    assert calls, "every lab has at least one exercise"
    for name, arg in calls:
        assert arg == f"my_{name}", f"check_{name} must be called on my_{name}, not {arg}"
        assert any(re.search(rf"^def my_{name}\(", c, re.M) for c in code), f"no def my_{name} in the notebook"
        assert hasattr(exercises, f"check_{name}"), f"utils.notebook.exercises has no check_{name}"
        assert any(hasattr(m, name) for m in modules), f"no reference {name} anywhere in utils/"
    for c in code:  # every function a learner writes is a my_ one
        if "# BEGIN SOLUTION" in c:
            assert all(n.startswith("my_") for n in re.findall(r"^def (\w+)\(", c, re.M)), c[:200]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: os.path.relpath(p, ROOT))
def test_setup_cell_is_the_shared_one(path):
    """Cell 1 of every notebook is, character for character, the setup cell of Lab 01; no other cell
    repeats it (one way to set up)."""
    shared = read(REFERENCE).cells[1].source
    cells = read(path).cells
    assert cells[1].cell_type == "code" and cells[1].source == shared
    assert sum("from utils.setup import setup" in c.source for c in cells if c.cell_type == "code") == 1


def _run_setup_cell(cwd):
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RLVR_LABS_FORCE_COLAB")}
    return subprocess.run([sys.executable, "-c", read(REFERENCE).cells[1].source], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_setup_cell_finds_the_course_from_labs(tmp_path):
    r = _run_setup_cell(os.path.join(ROOT, "labs"))
    assert r.returncode == 0 and "seed 0" in r.stdout, r.stderr[-2000:]


def test_setup_cell_outside_the_course_says_what_to_do(tmp_path):
    """A notebook opened away from the course folder: a clear error, not 'No module named utils'."""
    r = _run_setup_cell(tmp_path)
    assert r.returncode != 0
    assert "FileNotFoundError" in r.stderr and "open this notebook from labs/" in r.stderr, r.stderr[-2000:]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: os.path.relpath(p, ROOT))
def test_title_badge_goals_time_summary_and_self_check(path):
    cells = read(path).cells
    head, name = cells[0].source, os.path.basename(path)
    assert cells[0].cell_type == "markdown" and head.startswith("# Lab ")
    assert f"colab.research.google.com/github/rlvr-labs/rlvr-labs/blob/main/labs/{name}" in head
    assert "**Why it matters.**" in head and "**You will be able to**" in head and "**Time:**" in head
    # the figures without running: the solution stores every output (tools/make_labs.py --execute)
    assert f"](https://github.com/rlvr-labs/rlvr-labs/blob/main/solutions/{name})" in head
    # the glossary absolute too, so that it opens from Colab and GitHub's viewer (a relative link resolves there
    # against the viewer, not the repository); no other relative link either
    assert "](https://github.com/rlvr-labs/rlvr-labs/blob/main/docs/GLOSSARY.md)" in head
    assert not [i for i, c in enumerate(cells) if c.cell_type == "markdown" and "](../" in c.source]
    lab = name[:2]
    if int(lab) >= 6:   # from Lab 06 on, each lab says which earlier labs it builds on
        assert "Prerequisites:" in head
    # the end: the summary with its questions, then the self-check (utils/notebook/selfcheck.py)
    assert cells[-3].cell_type == "markdown" and cells[-3].source.startswith("## Summary")
    assert "**Questions to think about**" in cells[-3].source
    assert cells[-2].cell_type == "markdown" and cells[-2].source.startswith("## Check yourself")
    assert cells[-1].cell_type == "code" and f'self_check("{lab}")' in cells[-1].source
    # every "What to notice" follows something that ran
    for i, c in enumerate(cells):
        if c.cell_type == "markdown" and c.source.startswith("**What to notice.**"):
            assert cells[i - 1].cell_type == "code", \
                f"cell {i} of {name}: 'What to notice' without an experiment before it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: os.path.relpath(p, ROOT))
def test_plots_have_titles_and_labelled_axes(path):
    """Every code cell that makes a matplotlib figure sets a title and both axis labels somewhere in it
    (or calls utils.notebook.plots, which does)."""
    for i, c in enumerate(read(path).cells):
        src = c.source if c.cell_type == "code" else ""
        if re.search(r"plt\.subplots|plt\.figure", src) and "utils.notebook.plots" not in src:
            assert "set_title" in src or "suptitle" in src, f"cell {i}: a figure without a title"
            assert "set_xlabel" in src and "set_ylabel" in src, f"cell {i}: a figure without axis labels"


STORED = "# @title Stored-file check:"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: os.path.relpath(p, ROOT))
def test_stored_file_checks_are_out_of_the_learners_way(path):
    """An assertion on a stored benchmark's seeds (it keeps the prose honest if the benchmark is re-run, and cannot
    fail in the notebook's own run) sits in a cell of its own, titled '# @title Stored-file check: ...', with its
    source collapsed in JupyterLab (jupyter.source_hidden) and shown as a titled form in Colab (cellView): it runs
    in every pass, and a learner reads its printout, not its code."""
    for i, c in enumerate(read(path).cells):
        if c.cell_type != "code":
            continue
        hidden = c.metadata.get("jupyter", {}).get("source_hidden") is True and c.metadata.get("cellView") == "form"
        titled = c.source.startswith(STORED)
        assert hidden == titled, f"cell {i}: a stored-file check is titled {STORED!r} and hidden, and only it"
        if "from the stored benchmark (cannot fail in this run" in c.source:
            assert titled, f"cell {i} asserts on the stored benchmark in view: move those lines to a titled cell"


NOTICE_WORDS = 120   # issue 58: a "What to notice" is the finding first, then its evidence (a paragraph, a short list)
BOOKKEEPING = re.compile(r"\*\*What to notice\.\*\*\s*(all (three|3) seeds|each (statement|point)|every point"
                         r"|on (every|all|each) (of the )?(three |3 )?seeds?|(the )?benchmark|seeds? \d)", re.I)


@pytest.mark.parametrize("path", SOLUTIONS, ids=os.path.basename)
def test_what_to_notice_is_short_and_leads_with_the_finding(path):
    """Every "What to notice" is at most NOTICE_WORDS words (whitespace-separated) and opens with what was found,
    not with which seeds agree: the seeds, the benchmark's numbers per seed and the caveats come after the finding,
    or in docs/RESULTS.md's section for the lab."""
    for i, c in enumerate(read(path).cells):
        if c.cell_type == "markdown" and c.source.startswith("**What to notice.**"):
            n = len(c.source.split())
            assert n <= NOTICE_WORDS, f"cell {i}: 'What to notice' has {n} words, at most {NOTICE_WORDS}: the " \
                                      f"finding first, the evidence after; move seed bookkeeping to docs/RESULTS.md"
            assert not BOOKKEEPING.match(c.source), f"cell {i}: 'What to notice' opens with seed bookkeeping, not " \
                                                    f"the finding: {c.source[:100]!r}"


TRAINERS = ("train_grpo", "train_with_trl", "train_on_traces", "run_condition", "run_break", "self_train",
            "train_judge")


def _calls(src, names):
    """The text of every call to one of `names` in a code cell's source (to its matching parenthesis)."""
    for m in re.finditer(rf"\b({'|'.join(names)})\(", src):
        j, depth = m.end(), 1
        while depth and j < len(src):
            depth += {"(": 1, ")": -1}.get(src[j], 0)
            j += 1
        yield m.group(1), src[m.start():j]


@pytest.mark.parametrize("path", SOLUTIONS, ids=os.path.basename)
def test_every_training_run_names_its_progress_bar(path):
    """A learner watching a progress bar knows which run it is: every training call in a lab passes its own label
    (`progress="..."`), never the default ("GRPO" read on eleven bars of four labs before issue 58) or True."""
    for i, c in enumerate(read(path).cells):
        if c.cell_type != "code":
            continue
        for name, call in _calls(c.source, TRAINERS):
            label = re.search(r"progress=([^,)\n]+)", call)
            assert label and label.group(1).strip() not in ("True", "False"), \
                f"cell {i}: {name}(...) without a progress label of its own: {call[:120]}"

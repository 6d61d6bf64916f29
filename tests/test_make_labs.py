"""tools/make_labs.py: solution regions become stubs; labs/ stays in sync with solutions/."""
import glob
import importlib.util
import os

import nbformat
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def ml():
    spec = importlib.util.spec_from_file_location("make_labs", os.path.join(ROOT, "tools", "make_labs.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_stub_source_keeps_indentation_and_counts_code_lines(ml):
    src = ("def f(x):\n"
           "    # BEGIN SOLUTION\n"
           "    y = x + 1\n"
           "    # a comment does not count\n"
           "\n"
           "    return y\n"
           "    # END SOLUTION\n"
           "\n"
           "print(f(1))")
    # 2 code lines ("y = x + 1", "return y"); blank and comment lines are not counted
    assert ml.stub_source(src) == ("def f(x):\n"
                                   "    # YOUR CODE HERE (about 2 lines)\n"
                                   "    raise NotImplementedError\n"
                                   "\n"
                                   "print(f(1))")


def test_stub_source_top_level_and_two_regions(ml):
    src = ("# BEGIN SOLUTION\n"
           "a = 1\n"
           "# END SOLUTION\n"
           "class C:\n"
           "    def g(self):\n"
           "        # BEGIN SOLUTION\n"
           "        if True:\n"
           "            return 1\n"
           "        return 2\n"
           "        # END SOLUTION\n")
    assert ml.stub_source(src) == ("# YOUR CODE HERE (about 1 line)\n"
                                   "raise NotImplementedError\n"
                                   "class C:\n"
                                   "    def g(self):\n"
                                   "        # YOUR CODE HERE (about 3 lines)\n"
                                   "        raise NotImplementedError\n")


def test_stub_source_without_markers_is_unchanged(ml):
    src = "x = 1\n# just a comment\n  y = 2\n"
    assert ml.stub_source(src) == src


def test_stubbed_code_compiles_and_raises(ml):
    src = "def f(x):\n    # BEGIN SOLUTION\n    return x * 2\n    # END SOLUTION\n"
    ns = {}
    exec(compile(ml.stub_source(src), "<lab>", "exec"), ns)
    with pytest.raises(NotImplementedError):
        ns["f"](1)


@pytest.mark.parametrize("src, msg", [
    ("# BEGIN SOLUTION\nx = 1\n", "without '# END SOLUTION'"),
    ("x = 1\n# END SOLUTION\n", "without '# BEGIN SOLUTION'"),
    ("# BEGIN SOLUTION\n# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n# END SOLUTION\n", "nested"),
    ("# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n# END SOLUTION\n", "without '# BEGIN SOLUTION'"),
])
def test_stub_source_unbalanced_markers(ml, src, msg):
    with pytest.raises(ValueError, match=msg):
        ml.stub_source(src)


def solution_notebook():
    nb = nbformat.v4.new_notebook()
    out = nbformat.v4.new_output("stream", name="stdout", text="4\n")
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Lab\n# BEGIN SOLUTION stays in markdown"),
        nbformat.v4.new_code_cell("def f(x):\n    # BEGIN SOLUTION\n    return x * 2\n    # END SOLUTION",
                                  outputs=[out], execution_count=1),
        nbformat.v4.new_code_cell("print(2 + 2)", outputs=[out], execution_count=2),
        nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(2 + 2)", outputs=[out], execution_count=3),
    ]
    nb.cells[2].metadata["execution"] = {"iopub.status.idle": "2025-01-01"}
    return nb


def test_make_lab(ml):
    lab = ml.make_lab(solution_notebook())
    md, stub, plain, checked = lab.cells
    assert md.source == "# Lab\n# BEGIN SOLUTION stays in markdown"       # markdown untouched
    assert stub.source == "def f(x):\n    # YOUR CODE HERE (about 1 line)\n    raise NotImplementedError"
    assert stub.outputs == [] and plain.outputs == []                     # outputs stripped...
    assert len(checked.outputs) == 1 and checked.outputs[0]["text"] == "4\n"  # ...except NBVAL_CHECK_OUTPUT cells
    assert stub.execution_count is None and plain.execution_count is None
    assert checked.execution_count == 3  # kept: nbval treats a cell with outputs and no count as never run
    assert "execution" not in plain.metadata


def test_main_writes_then_checks(ml, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ml, "ROOT", str(tmp_path))
    (tmp_path / "solutions").mkdir()
    nbformat.write(solution_notebook(), str(tmp_path / "solutions" / "01_x.ipynb"))
    assert ml.main(["--check"]) == 1                       # labs/ missing: drift
    assert ml.main([]) == 0
    assert (tmp_path / "labs" / "01_x.ipynb").exists()
    assert ml.main(["--check"]) == 0                       # in sync
    lab = tmp_path / "labs" / "01_x.ipynb"
    lab.write_text(lab.read_text().replace("raise NotImplementedError", "return x * 2"))
    assert ml.main(["--check"]) == 1                       # someone edited the lab by hand
    ml.main([])
    nbformat.write(solution_notebook(), str(tmp_path / "labs" / "99_orphan.ipynb"))
    assert ml.main(["--check"]) == 1                       # a lab with no solution
    assert "99_orphan.ipynb (no solution)" in capsys.readouterr().err


def test_shipped_labs_in_sync(ml):
    if not glob.glob(os.path.join(ROOT, "solutions", "*.ipynb")):
        pytest.skip("solutions/ has no notebooks yet")
    assert ml.main(["--check"]) == 0, "labs/ has drifted from solutions/: run python tools/make_labs.py"


def test_no_stale_widget_state(ml):
    """A notebook that ran with progress bars carries their widgets' state in its metadata (30-130 KB, stale on
    every run): clean() drops it, and no shipped notebook carries it."""
    nb = nbformat.v4.new_notebook(metadata={"widgets": {"application/vnd.jupyter.widget-state+json": {"x": 1}}})
    assert "widgets" not in ml.clean(nb).metadata and "widgets" in nb.metadata
    carry = [p for d in ("labs", "solutions") for p in sorted(glob.glob(os.path.join(ROOT, d, "*.ipynb")))
             if "widgets" in nbformat.read(p, as_version=4).metadata]
    assert not carry, f"notebooks with stored widget state (run python tools/make_labs.py): {carry}"


def test_every_checked_cell_has_its_output():
    """nbval compares a `# NBVAL_CHECK_OUTPUT` cell only when it has stored outputs: one stored empty is never
    compared under nbval, and the browser pass (which compares every one) fails on it. Each carries what it
    printed (`python tools/make_labs.py --execute NN` stores it)."""
    empty = [f"{os.path.basename(p)} cell {c.get('id')}"
             for d in ("labs", "solutions") for p in sorted(glob.glob(os.path.join(ROOT, d, "*.ipynb")))
             for c in nbformat.read(p, as_version=4).cells
             if c.cell_type == "code" and c.source.startswith("# NBVAL_CHECK_OUTPUT") and not c.outputs]
    assert not empty, f"checked cells stored without their output: {empty}"

"""tools/make_labs.py: solution regions become stubs; labs/ stays in sync with solutions/."""
import glob
import os

import nbformat
import pytest
from course_tools import tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def ml():
    return tool("make_labs")


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


# --- the solutions' stored outputs (--execute) -------------------------------------------------------------------

def test_a_lab_keeps_no_record_of_its_solutions_run(ml):
    nb = solution_notebook()
    nb.metadata["rlvr_labs"] = {"executed_from": {"code": "x", "data": {}}}
    assert "rlvr_labs" not in ml.make_lab(nb).metadata and "rlvr_labs" in nb.metadata


def test_a_widget_is_stored_as_text(ml):
    """A progress bar's view becomes its last line (from the run's widget state), any other widget a note to run the
    cell; nothing else changes."""
    state = {"box": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_l", "IPY_MODEL_p", "IPY_MODEL_r"]}},
             "l": {"model_name": "HTMLModel", "state": {"value": "GRPO\u2007run:\u2007100%"}},
             "p": {"model_name": "FloatProgressModel", "state": {"value": 300, "max": 300}},
             "r": {"model_name": "HTMLModel", "state": {"value": "\u2007300/300\u2007[00:41&lt;00:00]"}},
             "quiz": {"model_name": "VBoxModel", "state": {"children": []}}}
    view = "application/vnd.jupyter.widget-view+json"
    outs = [nbformat.v4.new_output("display_data", data={view: {"model_id": "box"}, "text/plain": "HBox()"}),
            nbformat.v4.new_output("display_data", data={view: {"model_id": "quiz"}, "text/plain": "VBox()"}),
            nbformat.v4.new_output("stream", name="stdout", text="hello\n")]
    got = ml.stored_outputs(outs, state)
    assert got[0]["data"] == {"text/plain": "GRPO run: 100%|██████████| 300/300 [00:41<00:00]"}
    assert got[1]["data"] == {"text/plain": ml.WIDGET_NOTE}
    assert got[2] == outs[2]


def test_a_figure_is_stored_smaller_and_looks_the_same(ml):
    """small_png: a plot's PNG in a 256-colour palette, a fraction of the size, its pixels within a grey level or two
    of the original on average (the same picture at the notebook's size)."""
    import io

    import matplotlib
    import numpy as np
    from matplotlib.figure import Figure
    from PIL import Image

    matplotlib.use("Agg")
    fig = Figure(figsize=(6, 3), dpi=100)
    ax = fig.subplots()
    for k in range(5):
        ax.plot(np.sin(np.linspace(0, 6, 200) + k), label=f"run {k}")
    ax.set_title("a plot")
    ax.legend()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    small = ml.small_png(png)
    assert len(small) < 0.7 * len(png)
    a = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)
    b = np.asarray(Image.open(io.BytesIO(small)).convert("RGB"), dtype=float)
    assert a.shape == b.shape and np.abs(a - b).mean() < 2.0
    assert ml.small_png(small) == small or len(ml.small_png(small)) < len(small)


def test_what_a_run_read(ml, tmp_path):
    """Every file of a data/ folder the kernel opened a file of (a model is read partly outside Python), each
    benchmarks/results/ file it opened, nothing else."""
    (tmp_path / "data" / "model").mkdir(parents=True)
    (tmp_path / "data" / "model" / "config.json").write_text("{}")
    (tmp_path / "data" / "model" / "weights.bin").write_bytes(b"\0\1")
    (tmp_path / "data" / "other").mkdir()
    (tmp_path / "data" / "other" / "x.txt").write_text("x")
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    for name in ("lab01.json", "lab02.json"):
        (tmp_path / "benchmarks" / "results" / name).write_text(name)
    opened = [tmp_path / "data" / "model" / "config.json", tmp_path / "benchmarks" / "results" / "lab02.json",
              tmp_path / "utils.py", "/etc/hostname"]
    got = ml.data_read([str(p) for p in opened], root=tmp_path)
    assert sorted(got) == ["benchmarks/results/lab02.json", "data/model/config.json", "data/model/weights.bin"]
    assert got["data/model/weights.bin"] == ml.file_hash(tmp_path / "data" / "model" / "weights.bin")


def test_stale_says_why(ml, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "d.txt").write_text("1")
    nb = solution_notebook()
    assert ml.stale(nb, root=tmp_path) == ["never executed: no outputs (figures, tables) were stored"]
    nb.metadata["rlvr_labs"] = {"executed_from": {"code": ml.code_hash(nb),
                                                  "data": {"data/d.txt": ml.file_hash(tmp_path / "data" / "d.txt")}}}
    assert ml.stale(nb, root=tmp_path) == []
    nb.cells[1].metadata["rlvr_labs"] = {"figure": "docs/f.png"}     # a cell that should write a figure
    assert ml.stale(nb, root=tmp_path) == ["cell 1 should write docs/f.png, and has no figure stored"]
    del nb.cells[1].metadata["rlvr_labs"]
    nb.cells[0].source += "\nprose changes nothing"
    assert ml.stale(nb, root=tmp_path) == []
    nb.cells[2].source += "  # a code change"
    (tmp_path / "data" / "d.txt").write_text("2")
    assert ml.stale(nb, root=tmp_path) == ["its code cells changed since its outputs were made",
                                           "it read data/d.txt, which changed"]
    assert ml.refresh_command(["solutions/08_x.ipynb", "solutions/01_y.ipynb"]) == \
        "python tools/make_labs.py --execute 01 08"


def test_execute_stores_every_output_and_what_it_was_made_from(ml, tmp_path, monkeypatch):
    """A small solution run for real in a kernel: every output kept (a printout, a figure as PNG, a progress bar as
    its last line), no widget state, the code's and the data's hashes recorded, the figure its cell names written,
    and the lab made from it without outputs."""
    monkeypatch.setattr(ml, "ROOT", str(tmp_path))
    (tmp_path / "solutions").mkdir()
    (tmp_path / "data" / "numbers").mkdir(parents=True)
    (tmp_path / "data" / "numbers" / "n.txt").write_text("3\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Lab"),
        nbformat.v4.new_code_cell("n = int(open('../data/numbers/n.txt').read())\nprint('n is', n)"),
        nbformat.v4.new_code_cell("from tqdm.auto import tqdm\nfor _ in tqdm(range(n), desc='a run'):\n    pass"),
        nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, n]);"),
    ]
    nb.cells[3].metadata["rlvr_labs"] = {"figure": "docs/figures/f.png"}
    sol = tmp_path / "solutions" / "01_x.ipynb"
    nbformat.write(nb, str(sol))
    assert ml.main(["--execute"]) == 0
    got = nbformat.read(str(sol), as_version=4)
    assert "widgets" not in got.metadata
    made = got.metadata["rlvr_labs"]["executed_from"]
    assert made["code"] == ml.code_hash(got) and list(made["data"]) == ["data/numbers/n.txt"]
    assert got.cells[1].outputs[0]["text"] == "n is 3\n" and got.cells[1].execution_count == 1
    bar = [o["data"]["text/plain"] for o in got.cells[2].outputs if "data" in o]
    assert bar and bar[0].startswith("a run: 100%|██████████| 3/3"), got.cells[2].outputs
    png = ml.first_png(got.cells[3])
    assert png and (tmp_path / "docs" / "figures" / "f.png").read_bytes() == png
    assert ml.stale(got, root=tmp_path) == []
    lab = nbformat.read(str(tmp_path / "labs" / "01_x.ipynb"), as_version=4)
    assert all(not c.get("outputs") for c in lab.cells) and "rlvr_labs" not in lab.metadata
    (tmp_path / "data" / "numbers" / "n.txt").write_text("4\n")
    assert ml.stale(got, root=tmp_path) == ["it read data/numbers/n.txt, which changed"]

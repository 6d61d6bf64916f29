"""The solutions' stored outputs are those of their code and data: each solution was run by
`python tools/make_labs.py --execute` (every figure and table kept, so a learner sees them on GitHub or in Colab
without running), and neither its code cells nor a data file it read changed since. A stale solution fails here,
naming the command that refreshes it. The README's figure is one of those outputs, written beside them."""
import glob
import os
import re

import nbformat
import pytest
from course_tools import tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLUTIONS = sorted(glob.glob(os.path.join(ROOT, "solutions", "*.ipynb")))


ML = tool("make_labs")


@pytest.mark.parametrize("path", SOLUTIONS, ids=os.path.basename)
def test_stored_outputs_are_fresh(path):
    why = ML.stale(nbformat.read(path, as_version=4))
    assert not why, (f"solutions/{os.path.basename(path)}'s stored outputs are stale: {'; '.join(why)}. "
                     f"Refresh them with `{ML.refresh_command([path])}` (runs the lab, a few minutes) and commit.")


def test_the_readme_figure_is_a_solutions_output():
    """Each picture the README shows from docs/figures/ is written by a solution cell (its metadata names it), so
    the staleness check above covers it."""
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    shown = re.findall(r"\]\((docs/figures/[^)]+\.png)\)", readme)
    named = {c.metadata.get("rlvr_labs", {}).get("figure") for p in SOLUTIONS
             for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code"}
    assert shown, "the README shows no figure from docs/figures/"
    assert set(shown) <= named, f"README figures no solution cell writes: {sorted(set(shown) - named)}"

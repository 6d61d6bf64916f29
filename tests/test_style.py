"""The conventions of CONTRIBUTING.md that a machine can check: ruff over the library, the tests, the
tools, the benchmarks and every notebook's code (ruff.toml), and short lines in the notebooks' prose."""
import glob
import os
import subprocess
import sys

import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_PROSE = 120


def test_ruff_finds_nothing():
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"ruff check . found:\n{r.stdout[-4000:]}{r.stderr[-2000:]}"


def test_notebook_prose_lines_are_short():
    """Markdown lines stay within MAX_PROSE characters (tables, formulas and links excepted)."""
    long = []
    for path in sorted(glob.glob(os.path.join(ROOT, "solutions", "*.ipynb"))):
        for i, c in enumerate(nbformat.read(path, as_version=4).cells):
            if c.cell_type == "markdown":
                long += [f"{os.path.basename(path)} cell {i}: {len(line)} characters: {line[:60]}..."
                         for line in c.source.splitlines() if len(line) > MAX_PROSE
                         and not line.lstrip().startswith(("|", "$$", "[![")) and "](http" not in line]
    assert not long, "\n".join(long)

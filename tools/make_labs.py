"""Generate labs/ from solutions/ (the single source of truth).

    python tools/make_labs.py            # write labs/*.ipynb from solutions/*.ipynb
    python tools/make_labs.py --check    # exit 1 if labs/ has drifted from solutions/
    python tools/make_labs.py --execute  # first run each solution and store its checked outputs
    python tools/make_labs.py --execute 02   # ... only solutions/02_*

In a solutions notebook, each exercise's answer sits between two marker lines:

        # BEGIN SOLUTION
        ...the answer...
        # END SOLUTION

In the lab, the region becomes a stub at the same indentation:

        # YOUR CODE HERE (about N lines)
        raise NotImplementedError

Everything else, outputs included, is copied as is; no widget state is kept. Outputs are kept only in cells whose
source has "# NBVAL_CHECK_OUTPUT" (nbval compares those); the rest are stripped, so the
stored notebooks stay small and learners see their own results.
"""
import argparse
import copy
import glob
import os
import sys

import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"


def stub_source(src):
    """Replace every solution region in a cell's source with a stub. Raises on unbalanced markers."""
    out, lines, i = [], src.split("\n"), 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == BEGIN:
            indent = line[: len(line) - len(line.lstrip())]
            j = i + 1
            while j < len(lines) and lines[j].strip() != END:
                if lines[j].strip() == BEGIN:
                    raise ValueError("nested '# BEGIN SOLUTION'")
                j += 1
            if j == len(lines):
                raise ValueError("'# BEGIN SOLUTION' without '# END SOLUTION'")
            n = sum(1 for body in lines[i + 1 : j] if body.strip() and not body.strip().startswith("#"))
            out += [f"{indent}# YOUR CODE HERE (about {n} line{'s' if n != 1 else ''})",
                    f"{indent}raise NotImplementedError"]
            i = j + 1
            continue
        if line.strip() == END:
            raise ValueError("'# END SOLUTION' without '# BEGIN SOLUTION'")
        out.append(line)
        i += 1
    return "\n".join(out)


def clean(nb):
    """Strip outputs and execution counts except in NBVAL_CHECK_OUTPUT cells; drop volatile metadata: the
    run's execution times and its widgets' state (progress bars: 30-130 KB a notebook, stale on every run)."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if "NBVAL_CHECK_OUTPUT" not in cell.source:
            cell.outputs = []
            cell.execution_count = None  # nbval treats a cell with outputs and no count as never run
        cell.metadata.pop("execution", None)
    return nb


def make_lab(solution_nb):
    nb = clean(solution_nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and BEGIN in cell.source:
            cell.source = stub_source(cell.source)
            cell.outputs = []
    return nb


def pairs():
    for sol in sorted(glob.glob(os.path.join(ROOT, "solutions", "*.ipynb"))):
        yield sol, os.path.join(ROOT, "labs", os.path.basename(sol))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only check that labs/ matches solutions/")
    ap.add_argument("--execute", action="store_true", help="execute solutions/ first and keep checked outputs")
    ap.add_argument("only", nargs="*", help="with --execute: run only the solutions whose names start with these")
    args = ap.parse_args(argv)
    if args.execute:
        from nbclient import NotebookClient

        for sol, _ in pairs():
            if args.only and not any(os.path.basename(sol).startswith(o) for o in args.only):
                continue
            nb = nbformat.read(sol, as_version=4)
            NotebookClient(nb, timeout=900, kernel_name="python3",
                           resources={"metadata": {"path": os.path.dirname(sol)}}).execute()
            nbformat.write(clean(nb), sol)
            print("executed", os.path.relpath(sol, ROOT))
    drift = []
    for sol, lab in pairs():
        want = nbformat.writes(make_lab(nbformat.read(sol, as_version=4)))
        if args.check:
            have = open(lab).read() if os.path.exists(lab) else None
            if have != want:
                drift.append(os.path.relpath(lab, ROOT))
        else:
            os.makedirs(os.path.dirname(lab), exist_ok=True)
            with open(lab, "w") as f:
                f.write(want)
            print("wrote", os.path.relpath(lab, ROOT))
    extra = set(map(os.path.basename, glob.glob(os.path.join(ROOT, "labs", "*.ipynb")))) - \
        {os.path.basename(s) for s, _ in pairs()}
    drift += sorted(f"labs/{e} (no solution)" for e in extra)
    if drift:
        print("labs/ has drifted from solutions/: " + ", ".join(drift) +
              "\nRun `python tools/make_labs.py` and commit the result.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

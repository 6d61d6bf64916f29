"""Generate labs/ from solutions/ (the single source of truth), and keep the solutions' stored outputs.

    python tools/make_labs.py               # write labs/*.ipynb from solutions/*.ipynb
    python tools/make_labs.py --check       # exit 1 if labs/ has drifted from solutions/
    python tools/make_labs.py --execute     # first run every solution and store all its outputs, then write labs/
    python tools/make_labs.py --execute 02  # ... only solutions/02_*
    python tools/make_labs.py --stale       # which solutions' stored outputs are stale, and the command to refresh

In a solutions notebook, each exercise's answer sits between two marker lines:

        # BEGIN SOLUTION
        ...the answer...
        # END SOLUTION

In the lab, the region becomes a stub at the same indentation:

        # YOUR CODE HERE (about N lines)
        raise NotImplementedError

**Labs** keep no outputs but those of cells whose source has "# NBVAL_CHECK_OUTPUT" (nbval compares those), so a
learner sees their own results. **Solutions** keep every output of their last `--execute` (figures as PNG, tables,
printouts), so a learner who opens one on GitHub or in Colab sees what the lab shows without running it. Neither
keeps widget state (30-130 KB of progress bars a notebook, stale on every run): `--execute` turns each widget's
output into text (a progress bar into its last line, any other widget into a note to run the cell).

`--execute` records what the outputs were made from in the solution's metadata, `rlvr_labs.executed_from`: a hash
of its code cells' sources, and a hash of each data file it read (every file under data/ in a folder the kernel
opened a file of, since models and tokenizers are read partly outside Python; each file under benchmarks/results/
it opened). tests/test_executed.py fails when either no longer matches, naming this command. A code cell whose
metadata has `rlvr_labs.figure: "docs/figures/NAME.png"` also writes its first figure to that file (the README's
picture), checked by the same test.

Two parts of each solution are written from elsewhere, so they cannot drift: the "## Check yourself" cell (the
self-check's questions with their answers folded, utils/notebook/selfcheck.py's markdown()) and the header's
**Time:** line (docs/run_times.json, which tools/run_times.py writes into the solutions, the README and the
instructor guide). This script writes the first, and --check reports it.
"""
import argparse
import base64
import copy
import glob
import hashlib
import html
import io
import json
import os
import sys

import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
META = "rlvr_labs"                 # the solutions' own metadata key (notebook and cell)
WIDGET = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = "(an interactive widget: run this cell in Jupyter or Colab to use it)"


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
    run's execution times, its widgets' state and the solution's record of its execution."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    nb.metadata.pop(META, None)
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


# --- the "## Check yourself" cell, from utils/notebook/selfcheck.py ---------------------------------------------

def self_check_cell(nb, lab):
    """The solution's "## Check yourself" Markdown cell and what it should say (selfcheck.markdown), or None when
    the notebook has no such cell or no self-check (tests/test_notebooks.py requires both of every lab)."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from utils.notebook import selfcheck

    if lab not in selfcheck.QUESTIONS:
        return None
    cells = [c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## Check yourself")]
    return (cells[-1], selfcheck.markdown(lab)) if cells else None


# --- what the stored outputs were made from ------------------------------------------------------------------

def code_hash(nb):
    """sha256 of the notebook's code cells' sources, in order: what decides its outputs, besides the data."""
    h = hashlib.sha256()
    for cell in nb.cells:
        if cell.cell_type == "code":
            h.update(cell.source.encode())
            h.update(b"\0")
    return h.hexdigest()


def file_hash(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def data_read(opened, root=None):
    """{path relative to the root: sha256} of the data a run read, from the files its kernel opened: every file of
    a folder under data/ that it opened a file of (a model's weights and tokenizer are read outside Python, beside
    its config.json), and each file under benchmarks/results/ it opened."""
    root = os.path.abspath(root or ROOT)
    files = set()
    for path in opened:
        rel = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
        if rel.startswith("data/") and os.path.isfile(os.path.join(root, rel)):
            folder = os.path.dirname(os.path.join(root, rel))
            files |= {os.path.relpath(os.path.join(folder, f), root).replace(os.sep, "/") for f in os.listdir(folder)
                      if os.path.isfile(os.path.join(folder, f))}
        elif rel.startswith("benchmarks/results/") and os.path.isfile(os.path.join(root, rel)):
            files.add(rel)
    return {rel: file_hash(os.path.join(root, rel)) for rel in sorted(files)}


def stale(nb, root=None):
    """Why a solution's stored outputs are not those of its code and data ([] when they are)."""
    root = root or ROOT
    made = nb.metadata.get(META, {}).get("executed_from")
    if not made:
        return ["never executed: no outputs (figures, tables) were stored"]
    why = []
    if made.get("code") != code_hash(nb):
        why.append("its code cells changed since its outputs were made")
    for rel, h in sorted(made.get("data", {}).items()):
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            why.append(f"it read {rel}, which is gone")
        elif file_hash(path) != h:
            why.append(f"it read {rel}, which changed")
    for i, cell in enumerate(nb.cells):
        target = cell.metadata.get(META, {}).get("figure") if cell.cell_type == "code" else None
        if target:
            png = first_png(cell)
            path = os.path.join(root, target)
            if png is None:
                why.append(f"cell {i} should write {target}, and has no figure stored")
            elif not os.path.isfile(path) or open(path, "rb").read() != png:
                why.append(f"{target} is not cell {i}'s stored figure")
    return why


def first_png(cell):
    """The bytes of the first PNG among a code cell's outputs, or None."""
    for out in cell.get("outputs", []):
        data = out.get("data", {}).get("image/png")
        if data:
            return base64.b64decode(data if isinstance(data, str) else "".join(data))
    return None


def refresh_command(names):
    """The command that stores fresh outputs for these solutions (file names)."""
    return "python tools/make_labs.py --execute " + " ".join(sorted({os.path.basename(n)[:2] for n in names}))


# --- running a solution -----------------------------------------------------------------------------------------

# Run first in the kernel, before the notebook's own cells (and never stored): note every file Python opens.
AUDIT = """\
import os as _rlvr_os, sys as _rlvr_sys
_RLVR_OPENED = set()
def _rlvr_audit(event, args, _seen=_RLVR_OPENED, _os=_rlvr_os):
    if event == "open" and args and isinstance(args[0], (str, bytes)):
        try:
            _seen.add(_os.path.abspath(_os.fsdecode(args[0])))
        except Exception:
            pass
_rlvr_sys.addaudithook(_rlvr_audit)
"""
# Run last (never stored): what was opened, and what the outputs were made with.
REPORT = """\
import json as _rlvr_json, torch as _rlvr_torch
print(_rlvr_json.dumps({"opened": sorted(_RLVR_OPENED), "torch": _rlvr_torch.__version__,
                        "threads": _rlvr_torch.get_num_threads()}))
"""


def _widget_text(model_id, state):
    """A widget output as text: a progress bar (tqdm's HBox of label, bar and counts) as its last line, any other
    widget as a note to run the cell. `state` is the run's widget state (nbclient's)."""
    def model(ref):
        return state.get(str(ref).removeprefix("IPY_MODEL_"), {})
    box = model(model_id)
    kids = [model(k) for k in box.get("state", {}).get("children", [])]
    names = [k.get("model_name") for k in kids]
    if box.get("model_name") == "HBoxModel" and len(kids) == 3 and names[1] in ("FloatProgressModel",
                                                                                "IntProgressModel"):
        left, bar, right = (html.unescape(str(k["state"].get("value", ""))).replace("\u2007", " ")
                            for k in (kids[0], kids[1], kids[2]))
        value, top = kids[1]["state"].get("value", 0) or 0, kids[1]["state"].get("max", 0) or 0
        filled = int(round(10 * value / top)) if top else 0
        return f"{left}|{'█' * filled}{' ' * (10 - filled)}|{right}"
    return WIDGET_NOTE


def small_png(png):
    """A figure's PNG (bytes) at a third of the size, as the solutions store it: its few hundred colours (a plot's
    lines, text and their anti-aliasing) in a palette of 256, without dithering, which a reader cannot tell from
    the original at the notebook's own size. Unchanged where Pillow is missing or the result is not smaller."""
    try:
        from PIL import Image
    except ImportError:
        return png
    im = Image.open(io.BytesIO(png))
    if im.mode in ("RGBA", "LA", "P"):
        im = im.convert("RGBA")
        im = Image.alpha_composite(Image.new("RGBA", im.size, "white"), im)
    small = io.BytesIO()
    im.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        small, "PNG", optimize=True)
    return small.getvalue() if len(small.getvalue()) < len(png) else png


def stored_outputs(outputs, state):
    """A cell's outputs as a solution stores them: a widget's view becomes text (its state is not kept), a figure
    a smaller PNG (small_png)."""
    out = []
    for o in outputs:
        data = o.get("data", {})
        if WIDGET in data:
            text = _widget_text(data[WIDGET].get("model_id"), state)
            out.append(nbformat.v4.new_output("display_data", data={"text/plain": text}))
        elif "image/png" in data:
            o = copy.deepcopy(o)
            raw = data["image/png"]
            png = small_png(base64.b64decode(raw if isinstance(raw, str) else "".join(raw)))
            o["data"]["image/png"] = base64.b64encode(png).decode()
            out.append(o)
        else:
            out.append(o)
    return out


def execute(sol, kernel="python3", timeout=900):
    """Run solution `sol` top to bottom in a fresh kernel (its folder as the working directory) and store every
    output in it, with what they were made from (metadata rlvr_labs.executed_from) and each figure a cell's
    metadata names. An error in any cell raises before anything is written."""
    from nbclient import NotebookClient

    nb = nbformat.read(sol, as_version=4)
    run = copy.deepcopy(nb)
    run.cells = [nbformat.v4.new_code_cell(AUDIT)] + run.cells + [nbformat.v4.new_code_cell(REPORT)]
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # figures inline, as a learner sees them
    NotebookClient(run, timeout=timeout, kernel_name=kernel,
                   resources={"metadata": {"path": os.path.dirname(sol)}}).execute(env=env)
    report = json.loads("".join(o.get("text", "") for o in run.cells[-1].outputs if o.get("name") == "stdout"))
    state = run.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    for cell, done in zip(nb.cells, run.cells[1:-1]):
        if cell.cell_type == "code":
            cell.outputs = stored_outputs(done.outputs, state)
            cell.execution_count = done.execution_count - 1 if done.execution_count else None
            cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)
    nb.metadata[META] = {"executed_from": {"code": code_hash(nb), "data": data_read(report["opened"]),
                                           "torch": report["torch"], "torch_threads": report["threads"]}}
    for cell in nb.cells:
        target = cell.metadata.get(META, {}).get("figure") if cell.cell_type == "code" else None
        if target:
            png = first_png(cell)
            if png is None:
                raise RuntimeError(f"{os.path.basename(sol)}: the cell that should write {target} drew no figure")
            os.makedirs(os.path.dirname(os.path.join(ROOT, target)), exist_ok=True)
            with open(os.path.join(ROOT, target), "wb") as f:
                f.write(png)
            print("wrote", target)
    nbformat.write(nb, sol)
    return nb


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only check that labs/ matches solutions/")
    ap.add_argument("--execute", action="store_true", help="execute solutions/ first and store all their outputs")
    ap.add_argument("--stale", action="store_true", help="list the solutions whose stored outputs are stale")
    ap.add_argument("only", nargs="*", help="with --execute: run only the solutions whose names start with these")
    args = ap.parse_args(argv)
    if args.stale:
        old = {os.path.relpath(s, ROOT): stale(nbformat.read(s, as_version=4)) for s, _ in pairs()}
        old = {s: why for s, why in old.items() if why}
        for s, why in old.items():
            print(f"{s}: {'; '.join(why)}")
        if old:
            print(f"refresh with: {refresh_command(old)}")
        return 1 if old else 0
    drift = []
    for sol, _ in pairs():  # the parts of each solution written from elsewhere
        nb = nbformat.read(sol, as_version=4)
        cell = self_check_cell(nb, os.path.basename(sol)[:2])
        if cell and cell[0].source != cell[1]:
            if args.check:
                drift.append(f"{os.path.relpath(sol, ROOT)} (its '## Check yourself' cell is not "
                             f"utils/notebook/selfcheck.py's)")
            else:
                cell[0].source = cell[1]
                nbformat.write(nb, sol)
                print("wrote the self-check into", os.path.relpath(sol, ROOT))
    if args.execute:
        for sol, _ in pairs():
            if args.only and not any(os.path.basename(sol).startswith(o) for o in args.only):
                continue
            execute(sol)
            print("executed", os.path.relpath(sol, ROOT))
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

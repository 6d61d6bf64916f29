"""Each lab's time, from one table (docs/run_times.json) into the three places a learner or an instructor reads it.

    python tools/run_times.py          # write the lab headers' **Time:** line (solutions/, then labs/), the README's
                                       # "minutes: work / run" column and "How long" paragraph, the instructor
                                       # guide's "Timing at a glance" table
    python tools/run_times.py --check  # exit 1 naming every place that disagrees with docs/run_times.json

tests/test_run_times.py runs the check. A lab's run time moves when its cells do: measure it as the table's "about"
says, change its row, and run this script.
"""
import argparse
import json
import os
import re
import sys

import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "docs", "run_times.json")
README = os.path.join(ROOT, "README.md")
GUIDE = os.path.join(ROOT, "docs", "INSTRUCTOR_GUIDE.md")
NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
           10: "ten", 11: "eleven", 12: "twelve", 13: "thirteen", 14: "fourteen", 15: "fifteen"}


def load(path=None):
    with open(path or TABLE) as f:
        return json.load(f)["labs"]


def _span(values, fmt=str):
    lo, hi = min(values), max(values)
    return fmt(lo) if lo == hi else f"{fmt(lo)}-{fmt(hi)}"


def _half(minutes):
    """A number of minutes rounded to the half minute, as the tables write it (0.5 at least)."""
    m = max(0.5, round(minutes * 2) / 2)
    return f"{m:g}"


def run_minutes(row):
    """'2', '2.5-3': the run time in minutes, rounded to the half minute."""
    lo, hi = (_half(s / 60) for s in (min(row["run_seconds"]), max(row["run_seconds"])))
    return lo if lo == hi else f"{lo}-{hi}"


def work_minutes(row):
    return _span(row["work_minutes"])


def header_sentence(row):
    """The lab header's **Time:** sentence."""
    run = run_minutes(row)
    run_words = {"0.5": "half a minute", "1": "a minute"}.get(run, f"{run} minutes")
    return (f"**Time:** {work_minutes(row)} minutes to work through; about {run_words} to run top to bottom on a "
            f"2-core CPU.")


def readme_cell(row):
    """The README lab table's last column: 'work / run' minutes."""
    return f"{work_minutes(row)} / {run_minutes(row)}"


def guide_table(labs):
    lines = ["| lab | run all cells (2-core CPU; each solution under nbval, alone) | work through it "
             "| the slow cells |", "|---|---|---|---|"]
    for lab, row in labs.items():
        lines.append(f"| {lab} {row['title']} | ~{run_minutes(row)} min ({_span(row['run_seconds'])} s; "
                     f"{row['measured']}) | {work_minutes(row)} min | {row['slow_cells']} |")
    return "\n".join(lines)


def how_long(labs):
    """The README's "How long" paragraph."""
    lo = sum(min(r["work_minutes"]) for r in labs.values())
    hi = sum(max(r["work_minutes"]) for r in labs.values())
    each_lo = min(min(r["work_minutes"]) for r in labs.values())
    each_hi = max(max(r["work_minutes"]) for r in labs.values())
    run = sum((min(r["run_seconds"]) + max(r["run_seconds"])) / 2 for r in labs.values()) / 60
    return (f"**How long.** The whole course takes about {round(lo / 60)} to {round(hi / 60)} hours: "
            f"{NUMBERS.get(len(labs), len(labs))} labs of {each_lo} to {each_hi} minutes each, {lo}-{hi} minutes in "
            f"all. The computer's share of that, running every cell, is about {round(run / 5) * 5} minutes on a 2-core "
            f"CPU. Each lab's two times are in [docs/run_times.json](docs/run_times.json), the one table this README, "
            f"the labs and the [instructor guide](docs/INSTRUCTOR_GUIDE.md#timing-at-a-glance) are written from.")


def _wrap(paragraph, width=120):
    import textwrap
    return textwrap.fill(paragraph, width, break_on_hyphens=False, break_long_words=False)


# --- where each place keeps it ----------------------------------------------------------------------------------

TIME = re.compile(r"\*\*Time:\*\*.*?(?=\n\n|\Z)", re.S)


def header_time(nb):
    """The **Time:** paragraph of a notebook's first cell, or None."""
    m = TIME.search(nb.cells[0].source)
    return m.group(0) if m else None


def new_header_time(old, row):
    """The **Time:** paragraph with its sentence from the table; what follows it ("Prerequisites: ...") kept."""
    rest = re.search(r"Prerequisites:.*", " ".join(old.split()))
    return _wrap(header_sentence(row) + (" " + rest.group(0) if rest else ""))


def readme_rows(text):
    """{lab: the last cell of its row in the README's lab table}."""
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| \[(\d\d) [^\n]*\| ([^|\n]*)\|$", text, re.M)}


def guide_table_in(text):
    m = re.search(r"## Timing at a glance\n\n(\|.*?)\n\n", text, re.S)
    return m.group(1) if m else None


def how_long_in(text):
    m = re.search(r"\*\*How long\.\*\*.*?(?=\n\n)", text, re.S)
    return m.group(0) if m else None


def solutions():
    import glob
    return sorted(glob.glob(os.path.join(ROOT, "solutions", "*.ipynb")))


def check(labs=None):
    """Every place that disagrees with the table, as a list of lines ([] when all agree)."""
    labs = labs or load()
    bad = []
    for path in solutions():
        lab = os.path.basename(path)[:2]
        if lab not in labs:
            bad.append(f"docs/run_times.json has no row for lab {lab}")
            continue
        have = header_time(nbformat.read(path, as_version=4))
        if have is None or not " ".join(have.split()).startswith(header_sentence(labs[lab])):
            bad.append(f"solutions/{os.path.basename(path)}'s **Time:** line is {have!r}, the table says "
                       f"{header_sentence(labs[lab])!r}")
    readme = open(README).read()
    rows = readme_rows(readme)
    for lab, row in labs.items():
        if rows.get(lab) != readme_cell(row):
            bad.append(f"README.md's row for lab {lab} says {rows.get(lab)!r} minutes (work / run), the table "
                       f"{readme_cell(row)!r}")
    if " ".join((how_long_in(readme) or "").split()) != how_long(labs):
        bad.append(f"README.md's 'How long' paragraph is not the table's sum: {how_long(labs)!r}")
    if guide_table_in(open(GUIDE).read()) != guide_table(labs):
        bad.append("docs/INSTRUCTOR_GUIDE.md's 'Timing at a glance' table is not the table's")
    return bad


def write(labs=None):
    labs = labs or load()
    for path in solutions():
        lab = os.path.basename(path)[:2]
        nb = nbformat.read(path, as_version=4)
        old = header_time(nb)
        if old is None:
            raise ValueError(f"{path}: its first cell has no **Time:** line")
        new = new_header_time(old, labs[lab])
        if new != old:
            nb.cells[0].source = nb.cells[0].source.replace(old, new)
            nbformat.write(nb, path)
            print("wrote the time into", os.path.relpath(path, ROOT))
    readme = open(README).read()
    for lab, row in labs.items():
        readme = re.sub(rf"^(\| \[{lab} [^\n]*\| )[^|\n]*(\|)$",
                        lambda m, row=row: f"{m.group(1)}{readme_cell(row)} {m.group(2)}", readme, flags=re.M)
    old = how_long_in(readme)
    if old is None:
        raise ValueError("README.md has no '**How long.**' paragraph")
    readme = readme.replace(old, _wrap(how_long(labs)))
    open(README, "w").write(readme)
    guide = open(GUIDE).read()
    old = guide_table_in(guide)
    if old is None:
        raise ValueError("docs/INSTRUCTOR_GUIDE.md has no '## Timing at a glance' table")
    open(GUIDE, "w").write(guide.replace(old, guide_table(labs)))
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import make_labs
    return make_labs.main([])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only check the three places against the table")
    args = ap.parse_args(argv)
    if args.check:
        bad = check()
        print("\n".join(bad) or "the lab headers, the README and the instructor guide agree with docs/run_times.json",
              file=sys.stderr if bad else sys.stdout)
        return 1 if bad else 0
    return write()


if __name__ == "__main__":
    sys.exit(main())

"""docs/ANSWERS.md, the answer sketches to every lab's "Questions to think about": each question in a lab links to
its own sketch (one click), every sketch a lab links to exists under its heading and quotes its question, and the
README and the instructor guide link the page."""
import glob
import os
import re

import nbformat
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLUTIONS = sorted(glob.glob(os.path.join(ROOT, "solutions", "*.ipynb")))
URL = "https://github.com/rlvr-labs/rlvr-labs/blob/main/docs/ANSWERS.md"  # absolute: works on GitHub and in Colab
ANSWERS = open(os.path.join(ROOT, "docs", "ANSWERS.md"), encoding="utf-8").read()


def questions(path):
    """[(number, text with its link)] of the lab's "Questions to think about" list."""
    cells = [c.source for c in nbformat.read(path, as_version=4).cells
             if c.cell_type == "markdown" and "Questions to think about" in c.source]
    assert len(cells) == 1, f"{os.path.basename(path)}: one cell with 'Questions to think about', found {len(cells)}"
    block = cells[0].split("Questions to think about", 1)[1]
    found = re.findall(r"^(\d)\. (.*?)(?=^\d\. |^\s*$|\Z)", block, re.M | re.S)
    return [(int(n), " ".join(text.split())) for n, text in found]


def sketch(lab, k):
    """The text under '### Lab NN, question K' (up to the next heading), or None."""
    m = re.search(rf"^### Lab {lab}, question {k}\n(.*?)(?=^#|\Z)", ANSWERS, re.M | re.S)
    return m.group(1) if m else None


def words(text):
    return re.findall(r"[a-z0-9]+", re.sub(r"\[Sketch\]\([^)]*\)", "", text.lower()))


@pytest.mark.parametrize("path", SOLUTIONS, ids=os.path.basename)
def test_every_question_links_to_its_sketch(path):
    lab = os.path.basename(path)[:2]
    qs = questions(path)
    assert len(qs) >= 3 and [n for n, _ in qs] == list(range(1, len(qs) + 1)), qs
    for n, text in qs:
        link = f"[Sketch]({URL}#lab-{lab}-question-{n})"
        assert text.endswith(link), f"{os.path.basename(path)}, question {n}: end it with {link}"
        body = sketch(lab, n)
        assert body, f"docs/ANSWERS.md has no '### Lab {lab}, question {n}' for it"
        quoted = re.search(r'\*\*"(.*?)"\*\*', body, re.S)
        assert quoted and len(body.split()) >= 40, f"docs/ANSWERS.md, Lab {lab} question {n}: quote it, then sketch"
        # the quote may shorten the question, never change it: its words appear in order in the question
        asked, said = words(text), words(quoted.group(1))
        it = iter(asked)
        assert all(w in it for w in said), f"Lab {lab} question {n}: the sketch quotes another question"


def test_no_sketch_without_its_question():
    heads = re.findall(r"^### Lab (\d\d), question (\d)$", ANSWERS, re.M)
    asked = {(os.path.basename(p)[:2], str(n)) for p in SOLUTIONS for n, _ in questions(p)}
    assert heads and set(heads) == asked, sorted(set(heads) ^ asked)


def test_the_readme_and_the_guide_link_the_answers():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    guide = open(os.path.join(ROOT, "docs", "INSTRUCTOR_GUIDE.md"), encoding="utf-8").read()
    assert "](docs/ANSWERS.md)" in readme
    assert "](ANSWERS.md)" in guide

"""utils.notebook.selfcheck: every lab ends with its self-check, each question has one right option, and the
widget answers a pick the way answer() rules."""
import glob
import json
import os

import pytest

from utils import ROOT
from utils.notebook.selfcheck import QUESTIONS, answer, self_check


def test_every_lab_has_its_questions_and_its_cell():
    labs = sorted(os.path.basename(p)[:2] for p in glob.glob(os.path.join(ROOT, "solutions", "*.ipynb")))
    assert labs == sorted(QUESTIONS)
    for lab, questions in QUESTIONS.items():
        assert len(questions) >= 3, lab
        for question, options, right, why in questions:
            assert len(set(options)) == len(options) >= 3 and 0 <= right < len(options), question
            assert question.endswith("?") and why
        path = glob.glob(os.path.join(ROOT, "solutions", f"{lab}_*.ipynb"))[0]
        cells = ["".join(c["source"]) for c in json.load(open(path))["cells"] if c["cell_type"] == "code"]
        assert any(f'self_check("{lab}")' in c for c in cells), f"solutions/{lab}: no self_check(\"{lab}\") cell"


def test_answer_by_hand():
    assert answer("01", 0, 1) == (True, "Right. " + QUESTIONS["01"][0][3])
    right, text = answer("01", 0, 0)
    assert not right and text.startswith("Not quite.")
    for bad in (-1, 4, None, True, "1"):
        with pytest.raises(ValueError, match="pick one of options 0..3"):
            answer("01", 0, bad)


def test_the_widget_responds():
    box = self_check("05")
    first = box.children[0]
    pick, button, feedback = first.children[1], first.children[2].children[0], first.children[2].children[1]
    button.click()
    assert "Pick an answer first" in feedback.value
    pick.value = 2                                   # the right one: 1 - C(3,2)/C(4,2) = 0.5
    button.click()
    assert "Right." in feedback.value and "0.5" in feedback.value
    pick.value = 0
    button.click()
    assert "Not quite." in feedback.value
    with pytest.raises(ValueError, match="self-checks are for labs"):
        self_check("99")

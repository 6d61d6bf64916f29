"""utils.notebook.selfcheck: every lab ends with its self-check; each question has one right option and a reason
for every option; neither the place nor the length of an option gives the answer away; the widget answers a pick
the way answer() rules (on ipywidgets 8 here, on Colab's 7 in tests/test_colab.py); and the lab's "## Check
yourself" cell holds the same questions with their answers folded, for a reader with no kernel."""
import glob
import json
import os
from collections import Counter

import pytest

from utils import ROOT
from utils.notebook import selfcheck
from utils.notebook.selfcheck import QUESTIONS, answer, markdown, right_choice, self_check, shown

ALL = [(lab, i) for lab, qs in QUESTIONS.items() for i in range(len(qs))]


def test_every_lab_has_its_questions_and_its_cell():
    labs = sorted(os.path.basename(p)[:2] for p in glob.glob(os.path.join(ROOT, "solutions", "*.ipynb")))
    assert labs == sorted(QUESTIONS)
    for lab, questions in QUESTIONS.items():
        assert len(questions) >= 3, lab
        for question, options in questions:
            texts = [t for t, _ in options]
            assert len(set(texts)) == len(texts) >= 3, question
            assert question.endswith("?") and all(why.strip() for _, why in options), question
        path = glob.glob(os.path.join(ROOT, "solutions", f"{lab}_*.ipynb"))[0]
        cells = ["".join(c["source"]) for c in json.load(open(path))["cells"] if c["cell_type"] == "code"]
        assert any(f'self_check("{lab}")' in c for c in cells), f"solutions/{lab}: no self_check(\"{lab}\") cell"


@pytest.mark.parametrize("lab, i", ALL)
def test_the_shown_order_is_a_seeded_permutation_with_one_right_option(lab, i):
    options = shown(lab, i)
    assert sorted(t for t, _, _ in options) == sorted(t for t, _ in QUESTIONS[lab][i][1])
    assert [r for _, r, _ in options].count(True) == 1
    assert options == shown(lab, i)                               # the same order every time
    assert options[right_choice(lab, i)][0] == QUESTIONS[lab][i][1][0][0]


def test_the_right_answer_sits_in_no_fixed_place():
    """Over all questions the right option is spread evenly over the positions (each within 8 points of an even
    share), and no lab has all its right answers in one place. A new question can tip this: pick another
    selfcheck.SEED (the first of "rlvr-labs self-check N", N = 0, 1, ..., for which this test passes)."""
    by_n = {}
    for lab, i in ALL:
        by_n.setdefault(len(QUESTIONS[lab][i][1]), []).append(right_choice(lab, i))
    spread = Counter(right_choice(lab, i) for lab, i in ALL)
    most_common_n = max(by_n, key=lambda n: len(by_n[n]))
    for pos in range(most_common_n):
        share = spread[pos] / len(ALL)
        assert abs(share - 1 / most_common_n) <= 0.08, f"position {pos} holds {share:.0%} of the right answers: " \
            f"{dict(spread)} (see this test's docstring)"
    for lab, qs in QUESTIONS.items():
        places = {right_choice(lab, i) for i in range(len(qs))}
        assert len(places) > 1, f"lab {lab}: every right answer is option {places} (see this test's docstring)"


def test_the_right_answer_is_not_systematically_the_longest():
    """The right option is the longest of its question in at most 40% of the questions (a third is chance with
    three options), and in no lab in every question (it was in 26 of 33, all 9 of Labs 09-11, before issue 58)."""
    def longest(lab, i):
        lengths = [len(t) for t, _ in QUESTIONS[lab][i][1]]
        return lengths[0] == max(lengths) and lengths.count(max(lengths)) == 1
    share = sum(longest(lab, i) for lab, i in ALL) / len(ALL)
    assert share <= 0.40, f"the right option is the longest in {share:.0%} of the questions"
    for lab, qs in QUESTIONS.items():
        assert not all(longest(lab, i) for i in range(len(qs))), f"lab {lab}: the right option is always the longest"


def test_answer_by_hand():
    k = right_choice("01", 0)
    assert shown("01", 0)[k][0] == "0.75"
    assert answer("01", 0, k) == (True, "Right. " + QUESTIONS["01"][0][1][0][1])
    wrong = next(j for j in range(len(shown("01", 0))) if j != k)
    right, text = answer("01", 0, wrong)
    why = shown("01", 0)[wrong][2]
    assert not right and text == f"Not quite. {why} Try another."     # each wrong pick says what it gets wrong
    for bad in (-1, 4, None, True, "1"):
        with pytest.raises(ValueError, match="pick one of options 0..3"):
            answer("01", 0, bad)
    with pytest.raises(ValueError, match="self-checks are for labs"):
        shown("99", 0)


@pytest.mark.parametrize("lab", sorted(QUESTIONS))
def test_the_static_answers_hold_every_question_option_and_reason(lab):
    """The Markdown a viewer shows with no kernel: each question, its options in the widget's order, and a folded
    answer with the right option and the reason for each option; no prose line over 120 characters."""
    text = markdown(lab)
    flat = " ".join(text.split())
    assert text.startswith("## Check yourself")
    assert text.count("<details><summary>Answer</summary>") == text.count("</details>") == len(QUESTIONS[lab])
    for i, (question, _) in enumerate(QUESTIONS[lab]):
        assert f"**{i + 1}. {question}**" in flat
        options = shown(lab, i)
        for k, (option, right, why) in enumerate(options):
            assert f"- ({'abcd'[k]}) {option}" in flat
            assert " ".join(why.split()) in flat
        k = right_choice(lab, i)
        assert f"**({'abcd'[k]}) {options[k][0]}.**" in flat
    assert max(len(line) for line in text.splitlines()) <= 120


@pytest.mark.parametrize("lab", sorted(QUESTIONS))
def test_the_lab_holds_the_static_answers(lab):
    import nbformat

    for folder in ("solutions", "labs"):
        cells = nbformat.read(glob.glob(os.path.join(ROOT, folder, f"{lab}_*.ipynb"))[0], as_version=4).cells
        assert cells[-2].source == markdown(lab), \
            f"{folder}/{lab}'s '## Check yourself' cell is not selfcheck.markdown({lab!r}): " \
            "run python tools/make_labs.py"


def test_the_widget_responds():
    box = self_check("05")
    first = box.children[0]
    pick, button, feedback = first.children[1], first.children[2].children[0], first.children[2].children[1]
    button.click()
    assert "Pick an answer first" in feedback.value
    pick.value = right_choice("05", 0)                # the right one: 1 - C(3,2)/C(4,2) = 0.5
    button.click()
    assert "Right." in feedback.value and "0.5" in feedback.value
    wrong = next(j for j in range(3) if j != right_choice("05", 0))
    pick.value = wrong
    button.click()
    assert "Not quite." in feedback.value and "Try another." in feedback.value
    labels = [label for label, _ in pick.options]
    assert labels == [f"({'abc'[k]}) {t}" for k, (t, _, _) in enumerate(shown("05", 0))]
    with pytest.raises(ValueError, match="self-checks are for labs"):
        self_check("99")


def test_the_widget_writes_code_as_code():
    box = self_check("11")
    assert "<code>assert solve(0) == 57</code>" in box.children[1].children[0].value
    assert selfcheck._html("a < b `x`") == "a &lt; b <code>x</code>"

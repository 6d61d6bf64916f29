"""utils.notebook.widgets: parsing a typed problem, the answer table, the live-demo widget."""
import ipywidgets as w
import pytest

from utils.notebook.widgets import answer_table, compare_models, parse_problem
from utils.verifiers.arithmetic import strict_match


@pytest.mark.parametrize("text, want", [
    ("37 + 29", ("37+29=", "66")),        # spaces are dropped, "=" added
    ("37+29=", ("37+29=", "66")),
    ("  512-48 = ", ("512-48=", "464")),
    ("3-15", ("3-15=", "-12")),           # negative answers
    ("007+1", ("7+1=", "8")),             # leading zeros normalised to the prompt format
])
def test_parse_problem(text, want):
    assert parse_problem(text) == want


@pytest.mark.parametrize("junk", ["", "hello", "37+", "+29", "1234+1", "3/4", "12*11",  # the task has only + and -
                                   "37+29=66", "3 7+2", None])
def test_parse_problem_junk(junk):
    with pytest.raises(ValueError, match=r"type a problem like 37\+29"):
        parse_problem(junk)


def test_answer_table(shipped):
    model, tok = shipped
    prompt, answer, table = answer_table({"base": model, "same": model}, tok, "37 + 29", k=6, seed=0)
    assert (prompt, answer) == ("37+29=", "66")
    assert set(table) == {"base", "same"}
    for texts, n_ok, top in table.values():
        assert len(texts) == 6
        assert n_ok == sum(strict_match(t, "66") for t in texts)
        assert top in texts and texts.count(top) == max(texts.count(t) for t in texts)
    # each model is sampled with the same seed: the same model gives the same answers
    assert table["base"] == table["same"]
    # the seed fixes the answers
    assert answer_table({"m": model}, tok, "37+29", k=6, seed=0)[2]["m"] == table["base"]


def test_answer_table_greedy_all_agree(shipped):
    model, tok = shipped
    _, _, table = answer_table({"m": model}, tok, "5+5", k=4, temperature=0)
    texts, n_ok, top = table["m"]
    assert texts == [top] * 4 and n_ok in (0, 4)


def test_answer_table_bad_problem(shipped):
    model, tok = shipped
    with pytest.raises(ValueError):
        answer_table({"m": model}, tok, "what is 2 plus 2", k=2)


def test_compare_models_widget(shipped):
    model, tok = shipped
    box = compare_models({"base": model}, tok, default="37+29", k=4)
    assert isinstance(box, w.VBox)
    text, out = box.children[0].children[0], box.children[2]
    assert isinstance(text, w.Text) and isinstance(out, w.HTML)
    # it ran once on the default problem: the table names the prompt, the answer and each model
    assert "37+29=" in out.value and "<b>66</b>" in out.value and "base" in out.value and "/4 right" in out.value
    # typing junk shows the helpful error instead of raising
    text.value = "banana"
    assert "type a problem like" in out.value
    text.value = "3-15"
    assert "3-15=" in out.value and "<b>-12</b>" in out.value


def test_verifier_playground_widget():
    from utils.notebook.widgets import verifier_playground
    from utils.verifiers.arithmetic import ZOO

    box = verifier_playground({n: fn for n, (fn, _) in ZOO.items()}, default_problem="37+29", default_output="56")
    prob, text = box.children[0].children
    out = box.children[1]
    assert "37+29=" in out.value and "<b>66</b>" in out.value
    # '56': last_digit and digit_count pay (green), strict does not (red)
    row = lambda name: out.value.split(f"<b>{name}</b>")[1].split("</tr>")[0]  # noqa: E731
    assert "1.0" in row("last_digit") and "1.0" in row("digit_count") and "0.0" in row("strict")
    text.value = "66"
    assert "1.0" in row("strict")
    prob.value = "two plus two"
    assert "type a problem like" in out.value


def test_pass_at_k_explorer_widget():
    import numpy as np

    from utils.notebook.widgets import pass_at_k_explorer

    counts = {("base", "test"): np.array([0, 4, 8]), ("GRPO", "test"): np.array([1, 8, 8]),
              ("base", "ood"): np.array([0, 0, 1]), ("GRPO", "ood"): np.array([0, 1, 1])}
    box = pass_at_k_explorer(counts, 8, default_model="GRPO", default_k=4)
    model, split, k = box.children[0].children
    assert model.options == ("GRPO",) and split.options == ("ood", "test") and k.options == (1, 2, 4, 8)
    out = box.children[1]
    assert isinstance(out, w.Output)
    k.value = 8      # redraws without error
    split.value = "ood"


def test_answer_distribution_explorer_widget():
    from collections import Counter

    from utils.notebook.widgets import answer_distribution_explorer

    snaps = {"healthy": {0: [Counter({"66": 3, "65": 1}), Counter({"10": 4})],
                         20: [Counter({"66": 4}), Counter({"10": 2, "": 2})]},
             "collapsed": {0: [Counter({"66": 4}), Counter({"11": 4})]}}
    box = answer_distribution_explorer(snaps, ["37+29=", "5+5="], ["66", "10"], default_run="healthy")
    run, step, problem = box.children[0].children
    assert run.value == "healthy" and step.options == (0, 20) and step.value == 20
    assert [v for _, v in problem.options] == [0, 1]
    problem.value = 1          # redraws, an empty answer included
    run.value = "collapsed"    # the step slider follows the run's steps
    assert step.options == (0,) and step.value == 0
    with pytest.raises(ValueError, match="non-empty"):
        answer_distribution_explorer({"x": {}}, [], [])

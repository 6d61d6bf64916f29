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


# Lab 03's control explorer, on a synthetic benchmark in the format of benchmarks/results/lab03.json
LAB03_CONDITIONS = ["true reward", "random, 1 update", "random, 4 clipped updates", "random, 4 updates, no clip",
                    "wrong-answer reward", "true reward, lr 1e-5", "random, 1 update, lr 1e-5",
                    "random, 8 clipped updates, lr 1e-5", "random, 8 updates, no clip, lr 1e-5"]
PROMPTS, ANSWERS = ["37+29=", "5+5=", "3-15=", "1+1="], ["66", "10", "-12", "2"]


def lab03_bench(conditions=LAB03_CONDITIONS, seeds=(0, 1, 2), answers=True):
    """One run per (condition, seed); run i's numbers are i / 100 etc., so that each is recognisable."""
    runs = []
    for i, (c, s) in enumerate((c, s) for c in conditions for s in seeds):
        lr = 1e-5 if "lr 1e-5" in c else 1e-4
        run = {"seed": s, "config": {"lr": lr, "seed": s}, "condition": c, "seconds": 1.0, "clip_frac": 0.0,
               "after": {"greedy": i / 100, "pass@1": 0.2, "pass@8": 0.5, "entropy": 0.6},
               "curve": [[20, 0.1 + i / 1000], [40, 0.2], [60, 0.3]]}
        if answers:
            run["answers"] = ["66", "11", f"-{i}", ""]
        runs.append(run)
    return {"config": {"eval_n": 500}, "p": 0.3, "runs": runs,
            "before": {"greedy": 0.4, "pass@1": 0.27, "pass@8": 0.66, "entropy": 0.58}}


def test_control_runs_reference():
    import matplotlib.pyplot as plt

    from utils.notebook.widgets import control_runs, control_view

    bench = lab03_bench()
    run, ref, name = control_runs(bench, "random, 1 update", 1)
    assert (run["condition"], run["seed"], ref["condition"], ref["seed"], name) == \
        ("random, 1 update", 1, "true reward", 1, "true reward")
    # at the small learning rate: the true reward at the same rate
    run, ref, name = control_runs(bench, "random, 8 updates, no clip, lr 1e-5", 2)
    assert (ref["condition"], ref["seed"], name) == ("true reward, lr 1e-5", 2, "true reward, lr 1e-5")
    # a true-reward condition is its own reference
    run, ref, _ = control_runs(bench, "true reward, lr 1e-5", 0)
    assert ref is run
    # the old benchmark had no true reward at 1e-5: fall back to the true reward at the lab's rate
    old = lab03_bench([c for c in LAB03_CONDITIONS if c != "true reward, lr 1e-5"])
    assert control_runs(old, "random, 1 update, lr 1e-5", 0)[2] == "true reward"
    # no true-reward run with that seed: no reference
    lone = lab03_bench(["true reward"], seeds=(0,))
    lone["runs"] += lab03_bench(["random, 1 update"], seeds=(5,))["runs"]
    assert control_runs(lone, "random, 1 update", 5)[1:] == (None, "true reward")
    fig, summary, table = control_view(lone, "random, 1 update", 5, PROMPTS, ANSWERS)
    assert [line.get_label() for line in fig.axes[0].get_lines()][:1] == ["random, 1 update (seed 5)"]
    assert "<b>true reward (seed 5)</b>: not in the benchmark" in summary and "true reward" not in table
    plt.close(fig)


def test_control_runs_rejects_unknown():
    from utils.notebook.widgets import control_explorer, control_runs

    bench = lab03_bench()
    with pytest.raises(ValueError, match=r"unknown condition 'random reward'.*'true reward', 'random, 1 update'"):
        control_runs(bench, "random reward", 0)
    with pytest.raises(ValueError, match=r"no run with seed 7; its seeds: \[0, 1, 2\]"):
        control_runs(bench, "true reward", 7)
    with pytest.raises(ValueError, match=r"unknown condition 'nope'.*'wrong-answer reward'"):
        control_explorer(bench, PROMPTS, ANSWERS, default_condition="nope")
    with pytest.raises(ValueError, match="seed 9"):
        control_explorer(bench, PROMPTS, ANSWERS, default_seed=9)


def test_control_answer_rows_marks_right_and_wrong():
    from utils.notebook.widgets import _answer_table_html, control_answer_rows

    mine = ["66", " 10\n", "12", ""]   # right, right (whitespace is ignored), wrong sign, empty
    ref = ["066", "10", "-12"]          # leading zero is wrong; no answer stored for the 4th prompt
    rows = control_answer_rows(PROMPTS, ANSWERS, mine, ref, None)
    assert rows == [("37+29=", "66", [("66", True), ("066", False), None]),
                    ("5+5=", "10", [(" 10\n", True), ("10", True), None]),
                    ("3-15=", "-12", [("12", False), ("-12", True), None]),
                    ("1+1=", "2", [("", False), None, None])]
    table = _answer_table_html(rows, ["mine", "ref", "old run"])
    assert table.count("&#10003;") == 4 and table.count("&#10007;") == 3
    assert ">2/4 right<" in table and ">2/3 right<" in table and "&mdash;" in table  # the missing 4th answer
    assert table.count("(answers not stored)") == 1 and "rowspan='4'" in table  # one cell down the column
    assert "&#10007; <code>&empty;</code>" in table  # an empty answer is shown, and wrong


@pytest.mark.parametrize("answers", [True, False])
def test_control_view_every_condition_and_seed(answers):
    import matplotlib.pyplot as plt

    from utils.notebook.widgets import control_view

    bench = lab03_bench(answers=answers)
    for c in LAB03_CONDITIONS:
        for s in (0, 1, 2):
            fig, summary, table = control_view(bench, c, s, PROMPTS, ANSWERS)
            ax = fig.axes[0]
            ref = ("true reward, lr 1e-5" if "lr 1e-5" in c else "true reward")
            labels = [line.get_label() for line in ax.get_lines()]
            want = [f"{c} (seed {s})"] + ([] if c == ref else [f"{ref} (seed {s})"])
            assert labels == want + ["base model (pass@1 over 8 samples per problem)"]
            assert list(ax.get_lines()[-1].get_ydata()) == [0.27, 0.27]   # the base model, dashed
            assert ax.get_lines()[-1].get_linestyle() == "--"
            assert f"seed {s}" in ax.get_title() and c in ax.get_title() and "1 sample per problem" in ax.get_title()
            assert ax.get_xlabel() == "training step" and "accuracy, 0-1" in ax.get_ylabel()
            i = LAB03_CONDITIONS.index(c) * 3 + s
            assert f"<b>{c} (seed {s})</b>: greedy {i / 100:.3f}, pass@1 0.200, pass@8 0.500, entropy 0.600" in summary
            assert f"{ref} (seed {s})" in summary and "not like with like" not in summary
            for p in PROMPTS:
                assert f"<code>{p}</code>" in table
            if answers:
                assert "(answers not stored)" not in table and f"<code>-{i}</code>" in table
            else:
                assert table.count("(answers not stored)") == len(want)
            plt.close(fig)


def test_control_view_warns_when_learning_rates_differ():
    import matplotlib.pyplot as plt

    from utils.notebook.widgets import control_view

    old = lab03_bench([c for c in LAB03_CONDITIONS if c != "true reward, lr 1e-5"], answers=False)
    fig, summary, _ = control_view(old, "random, 1 update, lr 1e-5", 0, PROMPTS, ANSWERS)
    assert "vs true reward, seed 0" in fig.axes[0].get_title()
    assert "reference ran at lr 0.0001, this run at lr 1e-05: not like with like" in summary
    plt.close(fig)


def test_control_explorer_widget():
    from utils.notebook.widgets import control_explorer

    bench = lab03_bench()
    bench["runs"] = [r for r in bench["runs"] if not (r["condition"] == "wrong-answer reward" and r["seed"])]
    box = control_explorer(bench, PROMPTS, ANSWERS)
    (condition, seed), summary, (out, table) = box.children[0].children, box.children[1], box.children[2].children
    assert isinstance(condition, w.Dropdown) and isinstance(seed, w.ToggleButtons) and isinstance(out, w.Output)
    assert list(condition.options) == LAB03_CONDITIONS and condition.value == "random, 1 update"
    assert seed.options == (0, 1, 2) and seed.value == 0
    for c in LAB03_CONDITIONS:
        condition.value = c
        for s in seed.options:
            seed.value = s
            assert f"<b>{c} (seed {s})</b>" in summary.value and "&#10003;" in table.value
    # the seed buttons follow the condition's seeds, and keep the seed when the new condition has it
    seed.value = 2
    condition.value = "wrong-answer reward"
    assert seed.options == (0,) and seed.value == 0 and "wrong-answer reward (seed 0)" in summary.value
    condition.value = "true reward"
    assert seed.options == (0, 1, 2) and seed.value == 0
    seed.value = 2
    condition.value = "random, 1 update"
    assert seed.value == 2 and "true reward (seed 2)" in summary.value


def test_control_explorer_default_prompts_and_old_bench():
    from utils.eval.control import N_SHOWN
    from utils.notebook.widgets import control_explorer
    from utils.tasks.arithmetic import load_split

    box = control_explorer(lab03_bench(answers=False), default_condition="wrong-answer reward", default_seed=1)
    table = box.children[2].children[1].value
    test = load_split("test", n=N_SHOWN)
    assert all(f"<code>{p}</code>" in table for p in test["prompt"]) and N_SHOWN == 12
    assert table.count("(answers not stored)") == 2 and "rowspan='12'" in table


def test_trace_inspector_widget():
    from utils.notebook.widgets import trace_inspector
    from utils.verifiers import traces

    fns = {"outcome": traces.outcome_reward, "process": traces.process_reward,
           "arithmetic": traces.arithmetic_reward}
    box = trace_inspector(fns, examples={"skipped": ("478+356", "8+6+0=14 4+3+1=8 >834")})
    pick, (prob,), text, out = box.children[0], box.children[1].children, box.children[2], box.children[3]
    row = lambda name: out.value.split(f"<b>{name}</b>")[1].split("</tr>")[0]  # noqa: E731
    # the default is the right trace: every verifier pays 1
    assert text.value == "8+6+0=14 7+5+1=13 4+3+1=8 >834"
    assert all("1.00" in row(n) for n in fns)
    pick.value = "skipped"  # right answer, a step skipped: outcome 1, process 1/3, arithmetic 1
    assert prob.value == "478+356" and text.value == "8+6+0=14 4+3+1=8 >834"
    assert "1.00" in row("outcome") and "0.33" in row("process") and "1.00" in row("arithmetic")
    assert "(missing)" in out.value and "<code>7+5+1=13</code>" in out.value
    text.value = "1+1+0=2 >99"  # a true sum, the wrong step and answer
    assert "0.00" in row("outcome") and "0.00" in row("process") and "1.00" in row("arithmetic")
    text.value = "<script>"  # escaped, judged 0
    assert "<script>" not in out.value and "0.00" in row("outcome")
    prob.value = "478*356"
    assert "type a problem like" in out.value


def test_scaling_table_by_hand_and_explorer_widget():
    from utils.notebook.widgets import scaling_explorer, scaling_table

    # R0 0.2, A 0.6, C_mid 1000, B 1: at C = 1000 half the gain (0.4); at 2000, 0.2 + 0.4 * 2/3
    fits = {"small": {"A": 0.6, "C_mid": 1000.0, "B": 1.0, "R0": 0.2},
            "flat": {"A": 0.3, "C_mid": 1000.0, "B": 1.0, "R0": 0.3}}
    rows = scaling_table(fits, 1000, {"small": 500, "flat": 4000})
    assert abs(rows["small"]["accuracy"] - 0.4) < 1e-9 and abs(rows["small"]["share_of_gain"] - 0.5) < 1e-9
    assert abs(rows["small"]["gain_if_doubled"] - (0.2 + 0.4 * 2 / 3 - 0.4)) < 1e-9
    assert rows["small"]["extrapolated"] and not rows["flat"]["extrapolated"]
    assert rows["flat"]["gain_if_doubled"] == 0 and rows["flat"]["share_of_gain"] != rows["flat"]["share_of_gain"]
    measured = {"small": ([64, 128, 500], [0.2, 0.25, 0.3]), "flat": ([64, 4000], [0.3, 0.3])}
    box = scaling_explorer(fits, measured, default_model="flat", default_budget=1000)
    model, budget = box.children[0].children
    assert model.value == "flat" and budget.value == 1024 and isinstance(box.children[1], w.Output)
    assert "small" in box.children[2].value and "<b>" not in box.children[2].value
    budget.value = 4096   # redraws without error
    model.value = "small"
    assert "4096" in box.children[2].value
    assert len(box.children[0].children) == 2   # no FLOPs given: no x-axis toggle


def test_scaling_table_and_explorer_in_flops_by_hand():
    """With FLOPs per completion the budget counts FLOPs: each model is read at the completions it buys (budget /
    its cost), on the same fitted curve."""
    from utils.notebook.widgets import scaling_explorer, scaling_table

    fits = {"small": {"A": 0.6, "C_mid": 1000.0, "B": 1.0, "R0": 0.2},
            "flat": {"A": 0.3, "C_mid": 1000.0, "B": 1.0, "R0": 0.3}}
    flops = {"small": 2.0, "flat": 0.5}
    # 2000 FLOPs buy small 1000 completions (its midpoint: 0.4, half the gain, doubling adds 0.2 + 0.4 * 2/3 - 0.4)
    # and flat 4000 (its last measured point: not beyond it)
    rows = scaling_table(fits, 2000, {"small": 500, "flat": 4000}, flops)
    assert rows["small"]["completions"] == 1000 and rows["flat"]["completions"] == 4000
    assert abs(rows["small"]["accuracy"] - 0.4) < 1e-9 and abs(rows["small"]["share_of_gain"] - 0.5) < 1e-9
    assert abs(rows["small"]["gain_if_doubled"] - (0.2 + 0.4 * 2 / 3 - 0.4)) < 1e-9
    assert rows["small"]["extrapolated"] and not rows["flat"]["extrapolated"]
    assert scaling_table(fits, 2001, {"flat": 4000}, flops)["flat"]["extrapolated"]   # 4002 completions
    # the same numbers as the completions axis at the completions bought: one curve, two axes
    assert scaling_table(fits, 1000, {"small": 500, "flat": 4000})["small"] == rows["small"]
    assert scaling_table(fits, 2000)["small"]["completions"] == 2000   # without FLOPs: the budget itself
    for bad in ({"small": 2.0}, {"small": 2.0, "flat": 0}, [2.0, 0.5], {"small": 2.0, "flat": True}):
        with pytest.raises(ValueError, match="flops_per_completion"):
            scaling_table(fits, 2000, flops_per_completion=bad)

    measured = {"small": ([64, 128, 500], [0.2, 0.25, 0.3]), "flat": ([64, 4000], [0.3, 0.3])}
    box = scaling_explorer(fits, measured, default_model="flat", default_budget=1000, flops_per_completion=flops)
    model, budget, axis = box.children[0].children
    table = box.children[2]
    assert isinstance(axis, w.ToggleButtons) and axis.options == ("completions", "FLOPs")
    assert axis.value == "completions" and budget.value == 1024 and "FLOPs per completion" not in table.value
    axis.value = "FLOPs"   # the bold model's 1024 completions are 512 FLOPs (0.5 each): the same point
    assert budget.value == 512 and budget.label == "5.12e+02"
    assert "pass@1 at 5.12e+02 FLOPs" in table.value and "<td>256</td>" in table.value   # small: 512 / 2
    assert "<td>1024</td>" in table.value and "completions it buys" in table.value
    # FLOPs options: powers of 2 of flat's cost, from 64 of the cheapest completion (32) to 131072 of the dearest
    assert budget.options[0][1] == 32 and budget.options[-1][1] == 131072 * 2
    model.value = "small"
    budget.value = 8192   # small at 4096 completions, beyond its 500 measured; flat at 16384, beyond its 4000
    assert "<td>4096</td>" in table.value and table.value.count(">yes<") == 2
    axis.value = "completions"   # back: small's 4096 completions
    assert budget.value == 4096 and "FLOPs per completion" not in table.value and "pass@1 at 4096" in table.value


def test_episode_rows_and_view_by_hand():
    from utils.models.policy import load_policy
    from utils.notebook.widgets import episode_rows, episode_stepper, episode_view
    model, tok = load_policy("rlvr-tool")
    rows = episode_rows(model, tok, "478+356", k=4)
    assert len(rows) == 4 and rows == episode_rows(model, tok, "478+356", k=4)   # seeded
    for r in rows:   # the calculator's tokens sit right after a call's '=' and end with a space
        text = "".join(t for t, _ in r)
        env = "".join(t for t, who in r if who == "env")
        assert (env == "") == ("?" not in text) or text.endswith("<eos>")
    assert all(who == "policy" for r in episode_rows(model, tok, "478+356", k=4, tool=False) for _, who in r)
    with pytest.raises(ValueError, match="must be 'a\\+b'"):
        episode_rows(model, tok, "four")
    hand = [("?", "policy"), ("4", "policy"), ("7", "policy"), ("8", "policy"), ("+", "policy"), ("3", "policy"),
            ("6", "policy"), ("6", "policy"), ("=", "policy"), ("8", "env"), ("4", "env"), ("4", "env"), (" ", "env"),
            (">", "policy"), ("8", "policy"), ("4", "policy"), ("4", "policy"), ("<eos>", "policy")]
    part = episode_view(hand, 9, 478, 356)
    assert "9 of 18 tokens" in part and "policy</span> 9" in part and "check" not in part
    whole = episode_view(hand, 18, 478, 356)
    assert "calculator</span> 4" in whole and "disagree" in whole
    assert "<td>1</td>" in whole and "<td>0</td>" in whole     # the echo pays 1, the task 0
    box = episode_stepper(model, tok, k=2)
    assert "tokens" in box.children[-1].value


def test_layer_rows_and_view_by_hand():
    """Each layer's verdict of three bodies (run behind the wall), the judge's and the truth, shown in the view."""
    from utils.notebook.widgets import layer_rows, layers_view, reward_layers_explorer
    from utils.tasks.programs import make_problem

    p = make_problem(2, 5)
    rows = layer_rows([p["prompt"]] * 3, [p["answer"]] * 3, ["2*x+5", "exit(0)", "{0:5,1:7}[x]"],
                      judge=lambda ps, cs: [0.9, 0.6, 0.1])
    assert [r["truth"] for r in rows] == [True, False, False] and [r["kind"] for r in rows] == ["arithmetic", "exit",
                                                                                               "table"]
    assert rows[1]["checkers"] == {"naive, shown": 1.0, "harness, shown": 0.0, "harness, hidden": 0.0,
                                   "layered": -0.5}
    assert rows[2]["checkers"]["harness, shown"] == 1.0 and rows[2]["rules"] == ["structure"]
    view = layers_view(rows[1])
    assert "exit(0)" in view and "call, name" in view and "0.60" in view and ">wrong<" in view
    box = reward_layers_explorer(rows, default=2)
    assert "{0:5,1:7}[x]" in box.children[1].value
    box.children[0].value = 0
    assert ">right<" in box.children[1].value
    with pytest.raises(ValueError, match="pair up"):
        layer_rows([p["prompt"]], [p["answer"]] * 2, ["x"])


# Lab 12's gate explorer, on synthetic runs in the format of benchmarks/results/lab12.json
def lab12_probs(*weights):
    """18 probabilities: `weights` on the first kinds, 0 on the rest."""
    return list(weights) + [0.0] * (18 - len(weights))


def lab12_rates(*first, rest=0.0):
    return list(first) + [rest] * (18 - len(first))


LAB12_RUNS = {
    "proposer": {"probs": [[1, [1 / 18] * 18], [10, lab12_probs(0.5, 0.5)], [20, lab12_probs(0.25, 0.25, 0.5)]],
                 "by_length": [{"step": 0, "per_kind": lab12_rates(0.5, 0.0)},
                               {"step": 10, "per_kind": lab12_rates(0.5, 1.0, 0.25)}], "seed": 0},
    "uniform": {"probs": [[1, [1 / 18] * 18], [20, [1 / 18] * 18]],
                "by_length": [{"step": 20, "per_kind": lab12_rates(rest=0.5)},
                              {"step": 0, "per_kind": lab12_rates(rest=0.0)}]},
}


def test_gate_rows_and_totals_by_hand():
    from utils.notebook.widgets import gate_rows, gate_totals
    from utils.rl.proposer import band_share
    from utils.tasks.arithmetic import KINDS, kind_name

    probs, rates = lab12_probs(0.5, 0.5), lab12_rates(0.5, 0.0, 1.0, 0.25)
    rows = gate_rows(probs, rates)
    assert [r["kind"] for r in rows] == [kind_name(k) for k in KINDS] and rows[0]["kind"] == "1+1 digits"
    assert [r["prob"] for r in rows] == probs and [r["rate"] for r in rows] == rates
    # by hand, G = 8 at rate 1/2: j = 2..6 right of 8 lies in [0.25, 0.75]: (28 + 56 + 70 + 56 + 28) / 256; all
    # alike: 2 / 256. At rate 0 or 1 every group is all alike and outside the band
    assert rows[0]["in_band"] == pytest.approx(238 / 256) and rows[0]["no_spread"] == pytest.approx(2 / 256)
    assert (rows[1]["in_band"], rows[1]["no_spread"]) == (0.0, 1.0) == (rows[2]["in_band"], rows[2]["no_spread"])
    assert [r["in_band"] for r in rows] == pytest.approx(list(band_share(rates, (0.25, 0.75), 8)))
    # G = 4 at rate 1/4: j = 1..3 of 4 in the band: 1 - 0.75^4 - 0.25^4; all alike 0.75^4 + 0.25^4
    row = gate_rows(probs, rates, group_size=4)[3]
    assert row["in_band"] == pytest.approx(1 - 0.31640625 - 0.00390625) and row["no_spread"] == pytest.approx(
        0.3203125)
    assert gate_rows(probs, rates, band=(0.5, 0.5))[0]["in_band"] == pytest.approx(70 / 256)   # j = 4 only
    assert all(r["in_band"] == pytest.approx(1) for r in gate_rows(probs, rates, band=(0, 1)))
    # weighted by the proposer: half its groups at rate 1/2, half at rate 0
    totals = gate_totals(probs, rates)
    assert totals == pytest.approx({"in_band": 0.5 * 238 / 256, "no_spread": 0.5 * 2 / 256 + 0.5})
    assert gate_totals([1 / 18] * 18, rates, band=(0, 1)) == pytest.approx({"in_band": 1.0, "no_spread": pytest.approx(
        sum(r["no_spread"] for r in rows) / 18)})


@pytest.mark.parametrize("kw, name", [
    (dict(probs=[1 / 17] * 17), "probs"), (dict(probs=lab12_probs(0.5, 0.4)), "probs"),
    (dict(probs=lab12_probs(1.5, -0.5)), "probs"), (dict(probs="uniform"), "probs"),
    (dict(rates=lab12_rates(rest=1.5)), "rates"), (dict(rates=lab12_rates(-0.1)), "rates"),
    (dict(rates=[0.5] * 19), "rates"), (dict(rates=lab12_rates(float("nan"))), "rates"),
    (dict(band=(0.75, 0.25)), "band"), (dict(band=(0.25, 1.5)), r"band\[1\]"), (dict(band=0.5), "band"),
    (dict(band=(0.1, 0.2, 0.3)), "band"), (dict(group_size=0), "group_size"), (dict(group_size=8.0), "group_size"),
])
def test_gate_rows_bad_input_names_the_argument(kw, name):
    from utils.notebook.widgets import gate_rows, gate_totals

    good = dict(probs=lab12_probs(0.5, 0.5), rates=lab12_rates(0.5))
    for fn in (gate_rows, gate_totals):
        with pytest.raises(ValueError, match=name):
            fn(**dict(good, **kw))


def test_gate_view_draws_the_proposer_and_the_band():
    """The bars are the stored probabilities; each bar's shade and gid its kind's in_band, from the latest by_length
    reading at or before the step; the line gives gate_totals and states the approximation."""
    import matplotlib.pyplot as plt

    from utils.notebook.widgets import gate_rows, gate_totals, gate_view

    for step, read_at, rates in ((10, 10, lab12_rates(0.5, 1.0, 0.25)), (20, 10, lab12_rates(0.5, 1.0, 0.25)),
                                 (1, 0, lab12_rates(0.5, 0.0))):
        probs = dict(LAB12_RUNS["proposer"]["probs"])[step]
        fig, line = gate_view(LAB12_RUNS, "proposer", step, band=(0.25, 0.75))
        ax = fig.axes[0]
        assert [b.get_height() for b in ax.patches] == pytest.approx(probs)
        rows = gate_rows(probs, rates)
        assert [b.get_gid() for b in ax.patches] == [f"{r['kind']}|{r['rate']!r}|{r['in_band']!r}" for r in rows]
        assert [t.get_text() for t in ax.get_xticklabels()][:2] == ["1+1 digits (0.50)", f"1-1 digits ({rates[1]:.2f})"]
        assert f"read at step {read_at}" in ax.get_xlabel() and "probability" in ax.get_ylabel()
        assert f"proposer, step {step}" in ax.get_title() and "[0.25, 0.75]" in ax.get_title()
        totals = gate_totals(probs, rates)
        assert f"keeps an expected {totals['in_band']:.1%}" in line and f"{totals['no_spread']:.1%}" in line
        assert "as hard as the kind's mean" in line and f"read at step {read_at}" in line
        shade = {round(r["in_band"], 6): b.get_facecolor() for r, b in zip(rows, ax.patches)}
        if step == 10:   # rates 1/2, 1 and 1/4 on the first three kinds: darker for more of the groups in the band
            assert sum(shade[round(rows[0]["in_band"], 6)][:3]) < sum(shade[round(rows[2]["in_band"], 6)][:3]) < \
                sum(shade[0.0][:3])
        plt.close(fig)
    # by hand: at step 10, half the groups at rate 1/2 (238/256 in the band), half at rate 1 (none, all alike)
    _, line = gate_view(LAB12_RUNS, "proposer", 10)
    assert f"keeps an expected {0.5 * 238 / 256:.1%}" in line and f"and {0.5 * 2 / 256 + 0.5:.1%} of them" in line
    plt.close("all")
    with pytest.raises(ValueError, match=r"step=15 must be one of the steps stored for 'proposer': \[1, 10, 20\]"):
        gate_view(LAB12_RUNS, "proposer", 15)
    with pytest.raises(ValueError, match="arm='nope' must be one of"):
        gate_view(LAB12_RUNS, "nope", 1)


def test_gate_explorer_widget():
    from utils.notebook.widgets import gate_explorer, gate_totals

    box = gate_explorer(LAB12_RUNS)
    (arm, step, band), out, text = box.children[0].children, box.children[1], box.children[2]
    assert isinstance(arm, w.Dropdown) and isinstance(step, w.SelectionSlider) and isinstance(out, w.Output)
    assert isinstance(band, w.FloatRangeSlider) and isinstance(text, w.HTML)
    assert (band.min, band.max, band.step, band.value) == (0.0, 1.0, 0.125, (0.25, 0.75))
    assert arm.options == ("proposer", "uniform") and arm.value == "proposer"
    assert step.options == (1, 10, 20) and step.value == 20

    def shown(probs, rates, b=(0.25, 0.75)):
        t = gate_totals(probs, rates, b)
        return f"keeps an expected {t['in_band']:.1%}" in text.value and f"and {t['no_spread']:.1%} of" in text.value

    assert shown(lab12_probs(0.25, 0.25, 0.5), lab12_rates(0.5, 1.0, 0.25))
    assert "as hard as the kind&#x27;s mean" in text.value
    step.value = 1
    assert shown([1 / 18] * 18, lab12_rates(0.5, 0.0)) and "read at step 0" in text.value
    band.value = (0.0, 1.0)    # every group is in [0, 1]
    assert "keeps an expected 100.0%" in text.value and "the band [0, 1]" in text.value
    band.value = (0.5, 0.5)
    assert shown([1 / 18] * 18, lab12_rates(0.5, 0.0), (0.5, 0.5))
    # the step slider follows the arm's steps, and keeps the step when the new arm has it
    arm.value = "uniform"
    assert step.options == (1, 20) and step.value == 1 and "read at step 0" in text.value
    step.value = 20            # by_length is read in step order, whatever order it is stored in
    assert shown([1 / 18] * 18, lab12_rates(rest=0.5), (0.5, 0.5)) and "read at step 20" in text.value
    arm.value = "proposer"
    assert step.value == 20
    step.value = 10
    arm.value = "uniform"      # no step 10 there: the last
    assert step.value == 20
    assert gate_explorer(LAB12_RUNS, default="uniform").children[0].children[0].value == "uniform"


@pytest.mark.parametrize("runs, match", [
    ({}, "runs must be a dict"), ([], "runs must be a dict"),
    ({"a": {"probs": []}}, r"runs\['a'\] must be a run dict"),
    ({"a": dict(LAB12_RUNS["uniform"], probs=[[1, [0.5] * 18]])}, r"runs\['a'\]\['probs'\]\[0\]\[1\] must hold"),
    ({"a": dict(LAB12_RUNS["uniform"], probs=[[1, [1 / 18] * 18], [1, [1 / 18] * 18]])}, "step 1 twice"),
    ({"a": dict(LAB12_RUNS["uniform"], probs=[(1,)])}, r"runs\['a'\]\['probs'\]\[0\] must be \[step"),
    ({"a": dict(LAB12_RUNS["uniform"], by_length=[{"step": 0}])}, r"\['by_length'\]\[0\] must be a dict with"),
    ({"a": dict(LAB12_RUNS["uniform"], by_length=[{"step": 0, "per_kind": [2] * 18}])},
     r"\['by_length'\]\[0\]\['per_kind'\] must hold"),
    ({"a": dict(LAB12_RUNS["uniform"], by_length=[{"step": 5, "per_kind": [0.5] * 18}])},
     "no 'by_length' reading at or before it"),
])
def test_gate_explorer_bad_runs(runs, match):
    from utils.notebook.widgets import gate_explorer

    with pytest.raises(ValueError, match=match):
        gate_explorer(runs)


def test_gate_explorer_on_the_stored_benchmark():
    """The notebook's call: seed 0's proposer and self-play arms that stored the proposer's probabilities."""
    import json

    from utils import ROOT
    from utils.notebook.widgets import gate_explorer

    with open(f"{ROOT}/benchmarks/results/lab12.json") as f:
        bench = json.load(f)
    runs = {r["condition"]: r for part in ("proposer", "selfplay") for r in bench[part]["runs"]
            if r["seed"] == 0 and "probs" in r}
    box = gate_explorer(runs, default="proposer (learnability)")
    (arm, step, band), text = box.children[0].children, box.children[2]
    assert step.options[0] == 1 and step.value == 200 and len(arm.options) == len(runs) >= 2
    assert arm.value == "proposer (learnability)" and band.value == (0.25, 0.75)
    assert "the band [0.25, 0.75] keeps an expected" in text.value
    with pytest.raises(ValueError, match="default='nope' must be None or one of"):
        gate_explorer(runs, default="nope")

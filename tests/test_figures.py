"""utils.notebook.figures: every lab's figure is a Figure with a title and something drawn, and the numbers it
shows are the library's: read back from the drawn artists (bar heights, line points, the gids the module puts on
its cells) and compared with the function the lab teaches, and with values worked out by hand."""
import inspect
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from tolerance import assert_near  # noqa: E402

from utils.eval.control import CONTROL_HARMFUL, NEUTRAL, NOT_ONLY_VERIFIER, THRESHOLD  # noqa: E402
from utils.eval.metrics import pass_at_k  # noqa: E402
from utils.notebook import figures as F  # noqa: E402
from utils.rl.grpo import group_advantages  # noqa: E402
from utils.rl.proposer import expected_learnability, learnability  # noqa: E402
from utils.rl.rollout import fill_batch  # noqa: E402
from utils.rl.staleness import step_seconds  # noqa: E402
from utils.verifiers import traces  # noqa: E402
from utils.verifiers.arithmetic import ZOO, load_arithmetic_suite, strict_reward  # noqa: E402
from utils.verifiers.spurious import random_reward  # noqa: E402

FIGURES = [F.rlvr_loop, F.verifier_zoo, F.control_design, F.entropy_collapse, F.pass_at_k_curves, F.trace_rewards,
           F.dynamic_sampling, F.data_parallel, F.async_pipeline, F.checker_grid, F.self_play_loop]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def gids(fig):
    """{gid: artist} of every artist in the figure that has one."""
    return {a.get_gid(): a for a in fig.findobj() if a.get_gid()}


def parts(fig):
    """The gids split at '|'."""
    return [g.split("|") for g in gids(fig)]


def test_every_figure_function_is_tested_here():
    public = {n for n, f in inspect.getmembers(F, inspect.isfunction) if f.__module__ == F.__name__
              and not n.startswith("_")}
    assert public == {f.__name__ for f in FIGURES}


@pytest.mark.parametrize("fn", FIGURES, ids=lambda f: f.__name__)
def test_a_figure_with_a_title_and_something_drawn(fn):
    fig = fn()
    assert isinstance(fig, Figure)
    titles = [fig._suptitle.get_text() if fig._suptitle else ""] + [ax.get_title() for ax in fig.axes]
    assert any(t.strip() for t in titles), "a figure without a title"
    assert any(ax.patches or ax.texts or ax.lines or ax.collections for ax in fig.axes), "nothing drawn"
    fig.canvas.draw()  # the arrows between boxes are placed at draw time: drawing must not fail


def test_rlvr_loop_bars_are_group_advantages():
    fig = F.rlvr_loop()
    heights = [b.get_height() for b in fig.axes[1].patches]
    rewards = strict_reward(list(F.GROUP), ["66"] * len(F.GROUP))
    assert heights == pytest.approx(group_advantages(torch.tensor(rewards), len(F.GROUP)).tolist())
    # by hand: 3 right of 8, mean 0.375, population std sqrt(0.375 * 0.625) = 0.4841
    assert sum(rewards) == 3
    assert heights[:2] == pytest.approx([0.625 / 0.4841, -0.375 / 0.4841], abs=1e-3)
    # another group: 1 right of 4 -> +sqrt(3), -1/sqrt(3)
    heights = [b.get_height() for b in F.rlvr_loop(completions=("66", "1", "2", "3")).axes[1].patches]
    assert heights == pytest.approx([math.sqrt(3)] + [-1 / math.sqrt(3)] * 3, abs=1e-3)


def test_rlvr_loop_draws_what_the_library_computes(monkeypatch):
    """The bars come from group_advantages, not from numbers written into the figure."""
    monkeypatch.setattr(F, "group_advantages", lambda r, G, **kw: torch.arange(G, dtype=torch.float32))
    assert [b.get_height() for b in F.rlvr_loop().axes[1].patches] == list(range(len(F.GROUP)))


def test_verifier_zoo_ticks_are_the_verifiers_verdicts():
    fig = F.verifier_zoo()
    suite = {c["id"]: c for c in load_arithmetic_suite()}
    cells = parts(fig)
    assert len(cells) == len(ZOO) * len(F.ZOO_CASES)
    for name, case_id, paid in cells:
        c = suite[case_id]
        assert int(ZOO[name][0]([c["output"]], [c["answer"]])[0] == 1.0) == int(paid), (name, case_id)
    # by hand: strict refuses "66." and pays "66"; contains pays the wrong "1662"; nothing pays "I don't know"
    assert {"strict|format-5|0", "strict|correct-1|1", "contains|buried-1|1"} <= set(gids(fig))
    assert all(p == "0" for n, i, p in cells if i == "no_answer-3")


def test_control_design_arms_and_verdicts():
    fig = F.control_design()
    arms = {g.split("|")[1]: g.split("|")[2] for g in gids(fig) if g.startswith("arm|")}
    true_r = strict_reward(list(F.GROUP), ["66"] * len(F.GROUP))
    p = sum(true_r) / len(true_r)
    assert arms["true reward: strict_reward"] == " ".join(f"{r:.0f}" for r in true_r) == "1 0 1 0 0 0 1 0"
    assert arms[f"control: random_reward(p={p:.3f})"] == " ".join(f"{r:.0f}" for r in random_reward(p, 0)(F.GROUP))
    verdict = {float(g): v for g, v in (x.split("|") for x in gids(fig) if not x.startswith("arm|"))}
    inside, outside = round(THRESHOLD - 0.005, 3), round(THRESHOLD + 0.005, 3)      # the grid's step is 0.005
    assert verdict[0.0] == verdict[inside] == verdict[-inside] == NEUTRAL
    assert verdict[outside] == verdict[0.15] == NOT_ONLY_VERIFIER
    assert verdict[-outside] == verdict[-0.15] == CONTROL_HARMFUL


def test_entropy_collapse_bars_and_entropies():
    fig = F.entropy_collapse()
    logits = np.array(F.NEXT_LOGITS)
    hs = []
    for ax, lg in zip(fig.axes, (logits, 5.0 * logits)):
        p = np.exp(lg) / np.exp(lg).sum()   # by hand, in float64; the figure's are torch's, in float32: to rounding
        assert_near([b.get_height() for b in ax.patches], p, "the bars")
        h = float(-(p * np.log(p)).sum())   # by hand, in nats (the gid's 6 decimals add at most 5e-7)
        assert_near(float(ax.title.get_gid()), h, "the entropy")
        assert f"{h:.2f} nats" in ax.get_title()
        hs.append(h)
    assert hs[1] < 0.2 * hs[0] < hs[0] <= math.log(10)
    uniform = F.entropy_collapse(logits=(0.0,) * 4, sharpen=1.0)
    assert float(uniform.axes[0].title.get_gid()) == pytest.approx(math.log(4), abs=1e-5)


def test_pass_at_k_curves_are_the_estimator():
    fig = F.pass_at_k_curves()
    lines = fig.axes[0].get_lines()
    assert len(lines) == 4
    for line, rate in zip(lines, (0.01, 0.05, 0.2, 0.5)):
        c = round(rate * 256)
        assert list(line.get_ydata()) == pytest.approx([pass_at_k(256, c, k) for k in line.get_xdata()])
    # by hand: n = 4, c = 2: pass@1 = 1/2, pass@2 = 1 - C(2,2)/C(4,2) = 5/6, pass@3 = pass@4 = 1
    (line,) = F.pass_at_k_curves(rates=(0.5,), n=4).axes[0].get_lines()
    assert list(line.get_ydata()) == pytest.approx([0.5, 5 / 6, 1.0, 1.0])


def test_trace_rewards_are_the_verifiers():
    fig = F.trace_rewards()
    shown = {(p[0], p[1]): float(p[2]) for p in parts(fig) if p[0] in F.TRACE_REWARDS}
    texts = {"right": "8+6+0=14 7+5+1=13 4+3+1=8 >834", "right answer, a step skipped": "8+6+0=14 4+3+1=8 >834",
             "no working": ">834"}
    for (rname, case), v in shown.items():
        if case in texts:
            assert v == F.TRACE_REWARDS[rname][0]([texts[case]], answer=["834"], a=[478], b=[356])[0]
    assert len(shown) == 4 * 5
    # by hand: a skipped step is 1 right step of max(2 written, 3 needed); "no working" has the answer, no shape
    assert shown["process", "right answer, a step skipped"] == pytest.approx(1 / 3)
    assert shown["outcome", "no working"] == 1.0 and shown["format", "no working"] == 0.0
    assert shown["trace", "right"] == 1.0 and shown["trace", "right steps, wrong answer"] == 0.0
    steps = {(p[0], p[1]): p[2] for p in parts(fig) if p[0] not in F.TRACE_REWARDS}
    assert steps["right answer, a step skipped", "8+6+0=14"] == "1"   # the right first step
    assert steps["right answer, a step skipped", "4+3+1=8"] == "0"    # the right sum, in the wrong place
    assert steps["right steps, wrong answer", ">835"] == "0"
    assert traces.judge("8+6+0=14 4+3+1=8 >834", 478, 356)["per_step"][1]["right"] is False


def test_dynamic_sampling_draws_fill_batch():
    fig = F.dynamic_sampling()
    state = {(int(r), int(g)): s for r, g, s in parts(fig)}
    kept, used = fill_batch([torch.tensor(r, dtype=torch.float32) for r in F.ROUNDS], 4, 4)
    assert sorted(k for k, s in state.items() if s == "kept") == kept == [(0, 1), (0, 3), (1, 2), (2, 0)]
    assert used == 3 and "3 rounds" in fig.axes[0].get_title()
    assert [k for k, s in state.items() if s.startswith("not needed")] == [(2, 1), (2, 2), (2, 3)]
    assert state[0, 0] == state[0, 2] == "all alike: dropped"
    # a batch that never fills: every differing group is kept, every drawn group looked at
    fig = F.dynamic_sampling(n_groups=10)
    state = {(int(r), int(g)): s for r, g, s in parts(fig)}
    assert sum(s == "kept" for s in state.values()) == 5 and not any(s.startswith("not") for s in state.values())


def test_dynamic_sampling_draws_what_the_library_computes(monkeypatch):
    monkeypatch.setattr(F, "fill_batch", lambda rr, G, n: ([(0, 0)], 1))
    state = {(int(r), int(g)): s for r, g, s in parts(F.dynamic_sampling())}
    assert [k for k, s in state.items() if s == "kept"] == [(0, 0)]


@pytest.mark.parametrize("batch_size,group_size,processes", [(32, 8, 2), (24, 8, 2), (24, 4, 3)])
def test_data_parallel_split_and_advantages(batch_size, group_size, processes):
    rows = sorted([int(i), int(r), int(g), float(rw), float(a)] for i, r, g, rw, a in parts(F.data_parallel(
        batch_size, group_size, processes)))
    i, rank, group, rewards, adv = (list(col) for col in zip(*rows))
    per = batch_size // processes
    assert i == list(range(batch_size))
    assert rank == [j // per for j in i]                                          # rank r: rows r * per onwards
    assert group == [j // group_size for j in i]
    assert adv == pytest.approx(group_advantages(torch.tensor(rewards), group_size).tolist(), abs=1e-5)
    for g in set(group):   # by hand: each group's advantages have mean 0, over the whole group whichever rank
        in_g = [a for a, gg in zip(adv, group) if gg == g]
        assert len(in_g) == group_size and sum(in_g) == pytest.approx(0, abs=1e-4)
    if (batch_size, group_size, processes) == (24, 8, 2):
        assert set(rank[8:16]) == {0, 1}   # group 1 straddles the two ranks: its rewards are gathered


def test_data_parallel_refuses_a_batch_the_processes_cannot_share():
    with pytest.raises(ValueError, match="cannot be shared among 3 processes"):
        F.data_parallel(batch_size=32, group_size=8, processes=3)


@pytest.mark.parametrize("sample_s, update_s, lag", [(1.0, 0.5, 2), (0.11, 0.13, 1), (1.0, 0.25, 4), (0.5, 1.0, 3)])
def test_async_pipeline_versions_order_and_pace(sample_s, update_s, lag):
    """Each overlapped batch s is written by the policy of step max(0, s - lag) (StaleRollout's rule); sampling starts
    only once those weights exist (the end of the update before), an update only once its batch is in and the
    update before is done; once started, the learner's steps come step_seconds apart."""
    steps = 12
    fig = F.async_pipeline(sample_s, update_s, lag, steps)
    box = {}
    for g in parts(fig):
        timeline, kind, s, v = g
        r = gids(fig)["|".join(g)]
        box[timeline, kind, int(s)] = (int(v), r.get_x(), r.get_x() + r.get_width())
    for s in range(steps):
        v, start, end = box["overlapped", "sample", s]
        uv, ustart, uend = box["overlapped", "update", s]
        assert v == uv == max(0, s - lag)
        assert ustart >= end - 1e-9                                            # its batch is in
        weights_ready = 0.0 if v == 0 else box["overlapped", "update", v - 1][2]
        assert start >= weights_ready - 1e-9                                    # the weights it samples with exist
        if s:
            assert ustart >= box["overlapped", "update", s - 1][2] - 1e-9      # one learner
        sv, sstart, send = box["sequential", "sample", s]
        assert sv == s and sstart == pytest.approx(s * (sample_s + update_s))  # in turn: its own policy
    late = [box["overlapped", "update", s][1] for s in range(steps // 2, steps)]
    gaps = [b - a for a, b in zip(late, late[1:])]
    assert gaps == pytest.approx([step_seconds(sample_s, update_s, lag)] * len(gaps))
    assert f"{(sample_s + update_s) / step_seconds(sample_s, update_s, lag):.2f}x" in fig.axes[0].get_title()


def test_checker_grid_cells_are_the_checkers_scores():
    """Each cell is ProgramChecker's score of its body (run behind the wall): the naive checker pays both hacks and
    the table, the harness on the shown values the table only, the hidden tests neither, the layered checker
    charges the hacks."""
    from utils.verifiers.programs import CHECKERS

    fig = F.checker_grid()
    cells = {(int(i), c): float(v) for i, c, v in parts(fig)}
    assert set(c for _, c in cells) == set(CHECKERS) and len(cells) == len(F.GRID_BODIES) * len(CHECKERS)
    col = lambda c: [cells[i, c] for i in range(len(F.GRID_BODIES))]  # noqa: E731
    assert col("naive, shown") == [1, 1, 1, 1, 1, 0] and col("harness, shown") == [1, 1, 1, 0, 0, 0]
    assert col("harness, hidden") == [1, 1, 0, 0, 0, 0] and col("layered") == [1, 1, 0, -0.5, -0.5, 0.1]


def test_self_play_loop_curves_are_the_proposers_pay():
    """Right: expected_learnability for G = 8 (solid) and learnability (dashed), as the library computes them; AZR's
    mean peaks near p = 0.26 at 0.65, well below the near 1 that 1 - p reaches; left: the group's rewards, pass rate
    and pay."""
    fig = F.self_play_loop()
    lines = {line.get_gid(): line for line in fig.axes[1].get_lines() if line.get_gid()}
    assert set(lines) == {"azr|expected", "rzero|expected", "azr|per group", "rzero|per group", "azr|ends", "azr|peak"}
    for kind in ("azr", "rzero"):
        xs, ys = lines[f"{kind}|expected"].get_data()
        assert xs[0] == 0 and xs[-1] == 1 and len(xs) > 100
        assert list(ys) == pytest.approx(list(expected_learnability(xs, kind, 8)))
        xs, ys = lines[f"{kind}|per group"].get_data()
        assert list(ys) == pytest.approx([learnability(float(x), kind) for x in xs])
        assert lines[f"{kind}|per group"].get_linestyle() == "--"
    assert 0 < min(lines["azr|per group"].get_xdata()) and max(lines["azr|per group"].get_xdata()) < 1
    assert list(lines["azr|ends"].get_ydata()) == [0, 0]                        # AZR pays nothing at p = 0 or 1
    # by hand: at p = 1/2, AZR's mean over Binomial(8, 1/2) is sum_{j=1..7} C(8, j) (1 - j/8) / 256 = 127/256, and
    # R-Zero's is 1 - E|j - 4| / 4 = 1 - (2 * (4 + 24 + 56 + 56) / 256) / 4 = 0.7265625
    xs, ys = lines["azr|expected"].get_data()
    assert ys[list(xs).index(0.5)] == pytest.approx(127 / 256)
    xs, ys = lines["rzero|expected"].get_data()
    assert ys[list(xs).index(0.5)] == pytest.approx(0.7265625) == max(ys)
    (at,), (top,) = lines["azr|peak"].get_data()
    assert at == pytest.approx(0.26, abs=0.01) and top == pytest.approx(expected_learnability(at, "azr", 8))
    assert top == pytest.approx(0.65, abs=0.01) and top == pytest.approx(max(lines["azr|expected"].get_ydata()),
                                                                          abs=1e-3)
    assert max(lines["azr|per group"].get_ydata()) > 0.99 > top + 0.3             # 1 - p near p = 0: nearly 1
    assert "G = 8" in fig.axes[1].get_title() and "0-1)" in fig.axes[1].get_xlabel()
    assert "(0-1)" in fig.axes[1].get_ylabel()
    # left: 3 of the 8 completions of 47-38= say 9; p = 3/8, AZR pays 1 - 3/8, R-Zero 1 - 2|3/8 - 1/2| = 3/4
    boxes = {g.split("|")[0]: g.split("|")[1:] for g in gids(fig) if g.startswith(("rewards|", "pay|"))}
    assert boxes["rewards"] == [" ".join(f"{r:.0f}" for r in strict_reward(list(F.SELF_PLAY_GROUP), ["9"] * 8))] \
        == ["1 0 1 0 0 1 0 0"]
    assert [float(v) for v in boxes["pay"]] == [0.375, 0.625, 0.75]


def test_self_play_loop_majority_vote_and_the_library(monkeypatch):
    """With the majority vote as the checker, the majority's answer is paid, right or not: 4 of 8 say 8 (the answer
    is 9). The curves come from expected_learnability, not from numbers written into the figure."""
    fig = F.self_play_loop(completions=("9", "9", "9", "8", "8", "8", "8", "1"), checker="majority")
    boxes = {g.split("|")[0]: g.split("|")[1:] for g in gids(fig) if g.startswith(("rewards|", "pay|"))}
    assert boxes["rewards"] == ["0 0 0 1 1 1 1 0"] and [float(v) for v in boxes["pay"]] == [0.5, 0.5, 1.0]
    assert "majority vote" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="checker must be one of"):
        F.self_play_loop(checker="judge")
    monkeypatch.setattr(F, "expected_learnability", lambda p, kind, G: np.full(len(p), 0.3 if kind == "azr" else 0.4))
    lines = {line.get_gid(): line for line in F.self_play_loop().axes[1].get_lines() if line.get_gid()}
    assert set(lines["azr|expected"].get_ydata()) == {0.3} and set(lines["rzero|expected"].get_ydata()) == {0.4}

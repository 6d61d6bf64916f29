"""utils.notebook.plots: one panel per metric, labelled axes, one line per run."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from utils.notebook.plots import LABELS, plot_history  # noqa: E402


def history(n, base=0.2):
    return [{"step": i + 1, "seconds": 0.5 * (i + 1), "reward_mean": base + 0.01 * i, "entropy": 1 - 0.05 * i,
             "kl": 0.01 * i, "heldout_pass@1": (base + 0.02 * i) if (i + 1) % 5 == 0 else None} for i in range(n)]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_plot_history_labels():
    fig = plot_history({"GRPO": history(10), "random reward": history(10, 0.1)}, title="a run")
    axes = fig.axes
    assert len(axes) == 3
    for ax, key in zip(axes, ("reward_mean", "entropy", "heldout_pass@1")):
        assert ax.get_title() == LABELS[key][0] != ""
        assert ax.get_xlabel() == "training step"
        assert ax.get_ylabel() == LABELS[key][1] != ""
        assert len(ax.get_lines()) == 2               # one line per run
    assert fig._suptitle.get_text() == "a run"
    labels = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert labels == ["GRPO", "random reward"]


def test_plot_history_skips_missing_points():
    fig = plot_history({"run": history(10)}, keys=("heldout_pass@1",))
    (line,) = fig.axes[0].get_lines()
    # held-out pass@1 only at steps 5 and 10: 0.2 + 0.02 * 4 = 0.28 and 0.2 + 0.02 * 9 = 0.38
    assert list(line.get_xdata()) == [5, 10]
    assert list(line.get_ydata()) == pytest.approx([0.28, 0.38])


def test_plot_history_wall_clock_and_unknown_key():
    fig = plot_history({"run": history(4)}, keys=("kl", "my_metric"), x="seconds")
    ax_kl, ax_other = fig.axes
    assert ax_kl.get_xlabel() == "wall-clock time (s)"
    assert list(ax_kl.get_lines()[0].get_xdata()) == [0.5, 1.0, 1.5, 2.0]
    assert ax_other.get_title() == "my_metric"  # an unknown key still gets a title
    assert len(ax_other.get_lines()) == 0       # ...and no line when no record has it


def test_every_label_has_title_and_unit():
    for key, (title, unit) in LABELS.items():
        assert title and unit, key


def test_moving_average_by_hand():
    from utils.notebook.plots import moving_average
    assert list(moving_average([1, 2, 3, 4], 2)) == [1.5, 2.5, 3.5]
    assert list(moving_average([1, 2], 5)) == [1, 2]           # shorter than the window: unchanged
    assert list(moving_average([1, 2, 3], 1)) == [1, 2, 3]


def test_plot_history_smooths_per_step_metrics_not_evaluations():
    fig = plot_history({"run": history(10)}, keys=("reward_mean", "heldout_pass@1", "kl"), smooth=5, ncols=2)
    reward, held, kl, spare = fig.axes
    (line,) = reward.get_lines()
    # rewards 0.20..0.29: 5-step means at steps 5..10 are 0.22..0.27
    assert list(line.get_xdata()) == [5, 6, 7, 8, 9, 10]
    assert list(line.get_ydata()) == pytest.approx([0.22 + 0.01 * i for i in range(6)])
    assert "5-step mean" in reward.get_title() and "mean" not in held.get_title()
    assert list(held.get_lines()[0].get_xdata()) == [5, 10]   # evaluations drawn as they are
    assert not spare.get_visible()                           # 3 panels on a 2 x 2 grid

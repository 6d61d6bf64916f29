"""Widgets for live demos, one module per lab, as the exercise checks are: labNN.py holds Lab NN's widgets and the
rows and views they show (lab01 ... lab12; Lab 08 has none); common.py holds the checks of a widget's arguments and
the typed-problem parsers. Every name is re-exported here, so `from utils.notebook.widgets import compare_models`
works whichever module holds it. Each widget returns the ipywidgets box to display as a cell's last line; its rows
and views (answer_table, control_view, ...) are plain functions that need no widget."""
from utils.notebook.widgets.common import parse_problem
from utils.notebook.widgets.lab01 import answer_table, compare_models
from utils.notebook.widgets.lab02 import verifier_playground
from utils.notebook.widgets.lab03 import _answer_table_html as _answer_table_html  # tests/test_widgets.py uses it
from utils.notebook.widgets.lab03 import control_answer_rows, control_explorer, control_runs, control_view
from utils.notebook.widgets.lab04 import answer_distribution_explorer
from utils.notebook.widgets.lab05 import pass_at_k_explorer
from utils.notebook.widgets.lab06 import trace_inspector
from utils.notebook.widgets.lab07 import scaling_explorer, scaling_table
from utils.notebook.widgets.lab09 import episode_rows, episode_stepper, episode_view
from utils.notebook.widgets.lab10 import ratio_explorer, ratio_view
from utils.notebook.widgets.lab11 import layer_rows, layers_view, reward_layers_explorer
from utils.notebook.widgets.lab12 import gate_explorer, gate_rows, gate_totals, gate_view

__all__ = [
    "parse_problem",
    "answer_table", "compare_models",
    "verifier_playground",
    "control_runs", "control_answer_rows", "control_view", "control_explorer",
    "answer_distribution_explorer",
    "pass_at_k_explorer",
    "trace_inspector",
    "scaling_table", "scaling_explorer",
    "episode_rows", "episode_view", "episode_stepper",
    "ratio_view", "ratio_explorer",
    "layer_rows", "layers_view", "reward_layers_explorer",
    "gate_rows", "gate_totals", "gate_view", "gate_explorer",
]

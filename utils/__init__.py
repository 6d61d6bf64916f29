"""RLVR Labs: the small library the notebooks import. Where things live:

    setup.py     the one call every notebook's setup cell makes; files.py: writing files whole or not at all
    tasks/       the problems a policy learns: generators, prompt formats, splits (arithmetic.py, scratchpad.py),
                 choosing and ordering prompts (curation.py), a chat model's prompts (chat.py)
    verifiers/   reward functions in TRL's signature: the shared adapter (signature.py), arithmetic, trace,
                 chat, SQL and code verifiers, and the spurious rewards of the random-reward control
    models/      loading a policy, batched sampling, completion log-probs, memory estimates
    eval/        measuring a policy: sampling-based metrics, pass@k and pass rates (metrics.py), training
                 health (health.py), the random-reward control's check (control.py), trace metrics, scaling fits,
                 a run beside its stored benchmark's seeds (stored.py)
    rl/          the RL algorithm: GRPO's maths and config (grpo.py), our training loop (loop.py) and how its
                 batches are made (rollout.py), the same run through TRL (trl_trainer.py), several processes
    runs/        recipes that put the layers together: a lab's runs, building the base models
    notebook/    what only the notebooks need: exercise checks (exercises/labNN.py), plots, widgets (widgets/labNN.py)

The list runs from the bottom layer up: a module imports from its own layer or earlier ones in this list,
never later ones (tests/test_layers.py).
A new lab's helpers go where their concept lives (a task in tasks/, a reward in verifiers/, an
algorithm piece in rl/, a measurement in eval/); see CONTRIBUTING.md.
"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = os.path.join(ROOT, "data")
BASE_MODEL_DIR = os.path.join(DATA_DIR, "base_model")
TRACE_MODEL_DIR = os.path.join(DATA_DIR, "trace_model")  # the scratchpad task's model (Labs 06-07)
# the free-length variant's model (Lab 06's length study): half its pre-training traces carry a check pass
CHECK_MODEL_DIR = os.path.join(DATA_DIR, "check_model")
PROGRAM_MODEL_DIR = os.path.join(DATA_DIR, "program_model")  # one-line programs from two values (Lab 11)
TOOL_MODEL_DIR = os.path.join(DATA_DIR, "tool_model")  # the scratchpad task with a calculator (Lab 09)
LOOKUP_MODEL_DIR = os.path.join(DATA_DIR, "lookup_model")  # facts only the environment knows (utils.tasks.lookup)
MIX_MODEL_DIR = os.path.join(DATA_DIR, "mix_model")  # three tasks in one model (utils.tasks.mix; Lab 07's task mix)
# Lab 07's model sizes: the trace model's recipe at other depths and widths, and in a second family (Llama).
# name -> folder; utils.runs.build_base_model.SIZES says how each is built. "gpt2-4x128" is the trace model itself.
TRACE_SIZES_DIR = os.path.join(DATA_DIR, "trace_models")
TRACE_SIZES = {"gpt2-3x96": os.path.join(TRACE_SIZES_DIR, "gpt2-3x96"), "gpt2-4x128": TRACE_MODEL_DIR,
               "gpt2-6x192": os.path.join(TRACE_SIZES_DIR, "gpt2-6x192"),
               "llama-4x128": os.path.join(TRACE_SIZES_DIR, "llama-4x128")}


class CourseWarning(UserWarning):
    """A warning of the course's own (a run that will not fit in memory, say): setup() quiets the libraries'
    UserWarnings, never these."""

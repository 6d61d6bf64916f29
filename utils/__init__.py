"""RLVR Labs: the small library the notebooks import. Where things live:

    tasks/       the problems a policy learns: generators, prompt format, splits   (arithmetic.py)
    models/      loading a policy, batched sampling, completion log-probs; the base-model build script
    verifiers/   reward functions in TRL's signature: the shared adapter (signature.py), arithmetic,
                 SQL and code verifiers, and the spurious rewards of the random-reward control
    rl/          the RL algorithm: GRPO's maths and config (grpo.py), our training loop (loop.py),
                 the same run through TRL (trl_trainer.py)
    eval/        measuring a policy: sampling-based metrics and pass@k (metrics.py), training health
                 (health.py), the random-reward control (control.py)
    notebook/    what only the notebooks need: exercise checks, plots, widgets
    setup.py     the one call every notebook's setup cell makes

A new lab's helpers go where their concept lives (a task in tasks/, a reward in verifiers/, an
algorithm piece in rl/, a measurement in eval/); see CONTRIBUTING.md.
"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = os.path.join(ROOT, "data")
BASE_MODEL_DIR = os.path.join(DATA_DIR, "base_model")
TRACE_MODEL_DIR = os.path.join(DATA_DIR, "trace_model")  # the scratchpad task's model (Labs 06-07)
# Lab 07's model sizes: the trace model's recipe at other depths and widths, and in a second family (Llama).
# name -> folder; build_base_model.SIZES says how each is built. "gpt2-4x128" is the trace model itself.
TRACE_SIZES_DIR = os.path.join(DATA_DIR, "trace_models")
TRACE_SIZES = {"gpt2-3x96": os.path.join(TRACE_SIZES_DIR, "gpt2-3x96"), "gpt2-4x128": TRACE_MODEL_DIR,
               "gpt2-6x192": os.path.join(TRACE_SIZES_DIR, "gpt2-6x192"),
               "llama-4x128": os.path.join(TRACE_SIZES_DIR, "llama-4x128")}

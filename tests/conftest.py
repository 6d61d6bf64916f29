"""Shared test set-up: the repo root on sys.path, offline hub, quiet tokenizers, headless plots,
a fixed small thread count, and a module-scoped fixture for the shipped base model."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# set before transformers / huggingface_hub / matplotlib are imported by any test module
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["MPLBACKEND"] = "Agg"

import pytest  # noqa: E402
import torch  # noqa: E402

# The suite is budgeted for a 2-core CPU. RLVR_TEST_THREADS=1 is much faster when another
# CPU-heavy process shares the machine (two 2-thread processes on 2 cores spin on each other).
torch.set_num_threads(int(os.environ.get("RLVR_TEST_THREADS", "2")))


@pytest.fixture(scope="module")
def shipped():
    """(model, tokenizer) of the shipped base model, loaded once per test module.
    Tests that train must deep-copy the model first."""
    from utils.policy import load_policy

    model, tok = load_policy()
    model.eval()
    return model, tok

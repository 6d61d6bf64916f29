"""Measure the trace model's pass rate on every scratchpad train prompt and write the file Lab 07 reads
(utils.tasks.curation.load_pass_rates):

    python -m utils.runs.pass_rates   # n=16 samples per prompt: 377 s on 2 cores when it was written
"""
import json
import time

import numpy as np

from utils.eval.metrics import pass_rates
from utils.files import atomic_write
from utils.models.policy import load_policy
from utils.setup import setup
from utils.tasks.curation import PASS_RATES_CONFIG, PASS_RATES_FILE
from utils.tasks.scratchpad import load_split
from utils.verifiers.traces import outcome_reward


def write_pass_rates():
    """Measure the trace model's pass rate on every scratchpad train prompt (PASS_RATES_CONFIG) and write them."""
    c = PASS_RATES_CONFIG
    setup(c["seed"], quiet=True)
    model, tok = load_policy(c["model"])
    train, t = load_split("train"), time.time()
    rates = pass_rates(model, tok, train["prompt"], train["answer"], outcome_reward, n=c["n"],
                       max_new_tokens=c["max_new_tokens"], seed=c["seed"], batch_size=c["batch_size"])
    right = [int(round(r * c["n"])) for r in rates]
    with atomic_write(PASS_RATES_FILE) as f:
        json.dump({"config": c, "seconds": round(time.time() - t, 1), "right": right}, f)
    print(f"wrote {PASS_RATES_FILE}: {len(right)} prompts, mean pass rate {np.mean(rates):.3f}, "
          f"{time.time() - t:.0f} s")


if __name__ == "__main__":
    write_pass_rates()

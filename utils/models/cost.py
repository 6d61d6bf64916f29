"""How long a GRPO step takes, before you run it (Lab 08): count its FLOPs from the model's shape, then turn
FLOPs into seconds with a rate measured on your own machine (one short step of any model).

A matrix multiply of a token through N weights costs 2N FLOPs (arXiv 2001.08361, section 2.1). Per token of
a step's batch x (prompt + completion):
    sampling      2N   one forward, token by token with a KV cache
    update        2N   the forward that builds the loss
                  2N   the backward's gradients for the activations (needed whatever trains)
                  2N   the backward's gradients for the weights, when every weight trains (LoRA: ~0)
                  2N   a second forward, when gradient checkpointing recomputes the layers
N is every parameter (tied embeddings counted once: their cost is the LM head's matmul). Attention's own
T^2 term, the optimizer and the verifier are left out: at these lengths they are small next to the rest.

This holds where a step is compute-bound: on a CPU. On a GPU, sampling goes token by token and is bound by
latency, not FLOPs (measured in benchmarks/results/lab08_memory_cuda.json: 30-60 ms a token on an H200
whatever the model's size), so there seconds grow with the completion length, not the FLOPs.
"""
from utils import checks
from utils.models.memory import _dims, count_params


def step_flops(model_or_config, batch, prompt_len, completion_len, lora_rank=0, grad_checkpointing=True):
    """FLOPs of one GRPO step (see the module docstring). batch counts completions."""
    for name, v in (("batch", batch), ("prompt_len", prompt_len), ("completion_len", completion_len)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name}={v!r}: must be an integer >= 1")
    if isinstance(lora_rank, bool) or not isinstance(lora_rank, int) or lora_rank < 0:
        raise ValueError(f"lora_rank={lora_rank!r}: must be an integer >= 0 (0 = full fine-tune)")
    checks.flag("step_flops", "grad_checkpointing", grad_checkpointing)
    d, model = _dims(model_or_config)
    n = sum(p.numel() for p in model.parameters()) if model is not None else count_params(d)
    per_token = 2 * n * (1 + 2 + (0 if lora_rank else 1) + (1 if grad_checkpointing else 0))
    return batch * (prompt_len + completion_len) * per_token


def rate_from(seconds, flops):
    """FLOPs per second, from one measured step (its seconds and step_flops)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < float("inf"):
        raise ValueError(f"rate_from: seconds={seconds!r}: time a real step first (its seconds must be a finite "
                         f"number > 0)")
    flops = checks.number("rate_from", "flops", flops, lo=0, lo_open=True)
    return flops / seconds


def predict_seconds(flops, rate):
    """Seconds of a step of `flops` on a machine that ran `rate` FLOPs per second."""
    flops = checks.number("predict_seconds", "flops", flops, lo=0)
    rate = checks.number("predict_seconds", "rate", rate, lo=0, lo_open=True)
    return flops / rate

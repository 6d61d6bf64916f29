"""How much memory a GRPO step needs, before you run it (Lab 08: from the toy to a real model).

estimate_memory() adds up, in bytes, what a training step keeps alive at its peak:

    weights      every parameter x param_bytes (+ LoRA adapters, fp32)
    gradients    4 bytes per trainable parameter
    optimizer    AdamW: exp_avg and exp_avg_sq, 8 bytes per trainable parameter (+ a 4-byte fp32 master copy
                 when param_bytes < 4)
    reference    a frozen copy of the weights when beta > 0 and the whole model trains (ref_copy=True); with
                 LoRA the reference is the model with its adapter switched off, no copy
    activations  what autograd saves for the backward pass, per layer per token (see _layer_activations)
    logits       the LM head's [tokens, vocab] fp32 tensors (see _logits_bytes)
    kv_cache     generation: 2 (K and V) x layers x batch x (prompt + completion) x kv_dim x param_bytes

total = the larger of the two phases. Generation holds weights + optimizer state + KV cache; the training step
holds weights + optimizer state + either (activations + logits + the LM head's gradient), at the start of the
backward pass, or all gradients, at its end (backward frees a layer's activations as it fills its gradients, so
the peak is at one end). Gradients and activations are never counted at full size together.

The architectures in REAL_ARCHS are built offline with random weights (build_from_config): right for memory and
time, useless for accuracy, which needs the real weights.
"""
import warnings

import torch

from utils import CourseWarning, checks

REAL_ARCHS = {
    "SmolLM2-135M-Instruct": dict(
        model_type="llama", hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
        num_key_value_heads=3, vocab_size=49152, max_position_embeddings=8192, tie_word_embeddings=True,
        rope_theta=100000.0, rms_norm_eps=1e-5, hidden_act="silu"),
    "Qwen2.5-0.5B-Instruct": dict(
        model_type="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
        num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, tie_word_embeddings=True,
        rope_theta=1000000.0, rms_norm_eps=1e-6, hidden_act="silu"),
}
OPTIMIZER_BYTES = {"adamw": 8, "adamw_8bit": 2, "sgd_momentum": 4, "sgd": 0}  # state bytes per trainable param
LLAMA_LIKE = ("llama", "qwen2", "mistral")
# TRL's fused LM head (trl/kernels/chunked_logprob.py, TRL >= 1.x): [TOKEN_CHUNK x VOCAB_CHUNK] fp32 tiles
TOKEN_CHUNK, VOCAB_CHUNK = 4096, 32768
# tile-sized tensors alive at once in its backward: on CPU its torch path (_backward_tile) holds 8.25 (0.25: a bool
# mask); on a GPU with Triton the kernel works in place in the one buffer (mm_buf)
FUSED_TILES = {"cpu": 8.25, "cuda": 1.0}
FULL_LOGITS_FACTOR = 3  # naive head: logits, log-softmax, and one gradient of that size


def build_from_config(name, dtype=torch.float32, seed=0):
    """The architecture REAL_ARCHS[name] with random weights (seeded), built offline: for timing and memory
    only. Its answers are noise; accuracy needs the real weights from the hub."""
    from transformers import AutoConfig, AutoModelForCausalLM

    if name not in REAL_ARCHS:
        raise ValueError(f"unknown architecture {name!r}; known: {sorted(REAL_ARCHS)}")
    arch = dict(REAL_ARCHS[name])
    config = AutoConfig.for_model(arch.pop("model_type"), **arch)
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(config, dtype=dtype)


def _dims(model_or_config):
    """(dims dict, model or None) from a model, a transformers config, a config dict or a REAL_ARCHS name."""
    model = None
    obj = model_or_config
    if isinstance(obj, str):
        if obj not in REAL_ARCHS:
            raise ValueError(f"model_or_config: unknown architecture {obj!r}; known: {sorted(REAL_ARCHS)}, or pass a "
                             f"model/config")
        obj = REAL_ARCHS[obj]
    if isinstance(obj, torch.nn.Module):
        model, obj = obj, getattr(obj, "config", None)
    attn = getattr(obj, "_attn_implementation", None)
    if obj is not None and not isinstance(obj, dict) and hasattr(obj, "to_dict"):
        obj = obj.to_dict()
    if not isinstance(obj, dict) or "model_type" not in obj:
        raise ValueError(f"model_or_config needs a transformers model, a config (or its dict, with 'model_type'), "
                         f"or one of {sorted(REAL_ARCHS)}; got {checks._short(model_or_config)}")
    c, mt = obj, obj["model_type"]
    if mt in LLAMA_LIKE:
        h, heads = c["hidden_size"], c["num_attention_heads"]
        hd = c.get("head_dim") or h // heads
        d = dict(family="llama", h=h, i=c["intermediate_size"], layers=c["num_hidden_layers"], heads=heads,
                 hq=heads * hd, kv=(c.get("num_key_value_heads") or heads) * hd, positions=0)
        # q, k, v biases: Qwen2 always; Llama's attention_bias adds them and o_proj's
        d["bias"] = (d["hq"] + 2 * d["kv"]) * (mt == "qwen2" or bool(c.get("attention_bias"))) + h * bool(
            mt != "qwen2" and c.get("attention_bias"))
    elif mt == "gpt2":
        h = c["n_embd"]
        d = dict(family="gpt2", h=h, i=c.get("n_inner") or 4 * h, layers=c["n_layer"], heads=c["n_head"], hq=h,
                 kv=h, positions=c["n_positions"], gelu_ops=1 if c.get("activation_function") in
                 ("gelu_pytorch_tanh", "gelu", "relu", "silu") else 4)
    else:
        raise ValueError(f"model_type {mt!r} is not modelled; known: {LLAMA_LIKE + ('gpt2',)}")
    d.update(vocab=c["vocab_size"], tied=c.get("tie_word_embeddings", True),
             attn=attn or c.get("_attn_implementation") or c.get("attn_implementation") or "sdpa")
    return d, model


def _linears(d):
    """{name: (in, out)} of one decoder block's Linear (or GPT-2 Conv1D) layers."""
    h, i, hq, kv = d["h"], d["i"], d["hq"], d["kv"]
    if d["family"] == "llama":
        return {"q_proj": (h, hq), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (hq, h), "gate_proj": (h, i),
                "up_proj": (h, i), "down_proj": (i, h)}
    return {"c_attn": (h, 3 * h), "attn.c_proj": (h, h), "c_fc": (h, i), "mlp.c_proj": (i, h)}


def count_params(d):
    """All parameters, from the config dims (tied embeddings counted once):
    llama: V*h (+ V*h untied head) + h + layers * (h*hq + 2*h*kv + hq*h + 3*h*i + 2h [+ biases: q, k, v
           hq + 2kv (Qwen2, or Llama's attention_bias), o h (Llama's attention_bias)])
    gpt2:  V*h + P*h + 2h + layers * (h*3h + h*h + 2*h*i + 3h + h + i + h (biases) + 4h (two LayerNorms))"""
    per_layer = sum(a * b for a, b in _linears(d).values())
    if d["family"] == "llama":
        per_layer += 2 * d["h"] + d["bias"]
        extra = d["h"]
    else:
        per_layer += sum(b for _, b in _linears(d).values()) + 4 * d["h"]
        extra = d["positions"] * d["h"] + 2 * d["h"]
    head = 0 if d["tied"] else d["vocab"] * d["h"]
    return d["vocab"] * d["h"] + head + extra + d["layers"] * per_layer


def _targeted(names, targets):
    if targets == "all-linear":
        return list(names)
    unknown = [t for t in targets if not any(n == t or n.endswith("." + t) or n.split(".")[-1] == t for n in names)]
    if unknown:
        raise ValueError(f"lora_targets {unknown} match no layer; choose from {sorted(names)} or 'all-linear'")
    return [n for n in names if any(n == t or n.endswith("." + t) or n.split(".")[-1] == t for t in targets)]


def lora_params(d, model, rank, targets="all-linear"):
    """(LoRA parameters, targeted layers per block): rank * (in + out) per targeted Linear of the decoder
    blocks (A is in x r, B is r x out); 'all-linear' is peft's: every Linear/Conv1D except the LM head."""
    if model is None:
        names = _targeted(_linears(d), targets)
        return d["layers"] * sum(rank * sum(_linears(d)[n]) for n in names), len(names)
    from transformers.pytorch_utils import Conv1D

    shapes, head = {}, getattr(model, "get_output_embeddings", lambda: None)()
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.Linear) and m is not head:
            shapes[name] = (m.in_features, m.out_features)
        elif isinstance(m, Conv1D):
            shapes[name] = tuple(m.weight.shape)   # Conv1D's weight is [in, out]
    names = _targeted(shapes, targets)
    return sum(rank * sum(shapes[n]) for n in names), len(names) / max(1, d["layers"])


def _layer_activations(d, seq_len, lora_rank=0, lora_per_block=0):
    """Elements autograd saves per token in one decoder block (training forward), counted op by op and checked
    against torch.autograd.graph.saved_tensors_hooks (tests/test_memory.py):
      llama/qwen2 (RMSNorm, RoPE, SwiGLU), per norm: input h, rstd 1, normed h (only if the norm weight
          trains), output h; attention sdpa: q hq, k kv, v kv, logsumexp heads, o_proj input hq;
          eager: q, k, v repeated to all heads 3*hq, probabilities heads*L, o_proj input hq; MLP: gate, up,
          silu(gate), product: 4i.   Full fine-tune, sdpa: 8h + 2kv + 4i + heads + 2.
      gpt2 (LayerNorm, fused qkv, GELU), per norm: input h, mean and rstd 2, output h; attention sdpa:
          c_attn output 3h, a q copy h, output h, logsumexp heads, c_proj input h; eager: 3h + heads*L + h;
          MLP: c_fc output i, GELU output i (one op; gelu_new is 4 ops: 5i).  sdpa: 10h + heads + 4 + 2i.
      LoRA adds the r-wide output of each adapter's A (saved by B), and a frozen RMSNorm weight saves no
      normed copy (-2h)."""
    h, i, hq, kv, heads = d["h"], d["i"], d["hq"], d["kv"], d["heads"]
    if d["family"] == "llama":
        norms = 2 * (2 * h + 1 + (0 if lora_rank else h))
        attn = 2 * hq + 2 * kv + heads if d["attn"] != "eager" else 4 * hq + heads * seq_len
        mlp = 4 * i
    else:
        norms = 2 * (2 * h + 2)
        attn = 6 * h + heads if d["attn"] != "eager" else 4 * h + heads * seq_len
        mlp = (1 + d["gelu_ops"]) * i
    return norms + attn + mlp + lora_rank * lora_per_block


def _logits_bytes(d, tokens, logits, device="cpu"):
    """The LM head's transient fp32 memory for `tokens` scored positions:
      'full'  (a plain forward, e.g. utils.rl.loop): tokens * V * 4 * FULL_LOGITS_FACTOR (logits, log-softmax,
              and one gradient of that size alive together)
      'fused' (TRL's fused head): the logits are never materialised; it works in [min(tokens, 4096),
              min(V, 32768)] fp32 tiles, FUSED_TILES[device] of them alive in its backward (counted from its code:
              8.25 on CPU, 1 on a GPU with Triton)."""
    if logits == "full":
        return tokens * d["vocab"] * 4 * FULL_LOGITS_FACTOR
    if logits == "fused":
        if device not in FUSED_TILES:
            raise ValueError(f"device={device!r}: the estimate knows 'cpu' and 'cuda'")
        return min(tokens, TOKEN_CHUNK) * min(d["vocab"], VOCAB_CHUNK) * 4 * FUSED_TILES[device]
    raise ValueError(f"logits must be 'fused' (TRL's GRPOTrainer) or 'full' (a plain forward); got {logits!r}")


def estimate_memory(model_or_config, batch, prompt_len, completion_len, lora_rank=0, param_bytes=4,
                    optimizer="adamw", grad_checkpointing=False, lora_targets="all-linear", ref_copy=False,
                    logits="fused", device="cpu"):
    """Bytes per component of one GRPO step (see the module docstring). batch counts completions (our
    GRPOConfig.batch_size: prompts x group_size), L = prompt_len + completion_len tokens each.

    activations = batch * L * (layers * a + 3h) * param_bytes, a = _layer_activations (per token per block),
        3h = final norm and the LM head's input; with gradient checkpointing each block keeps only its input
        (h per token) and one block's activations are rebuilt at a time: batch * L * (layers * h + a + 3h).
    logits = _logits_bytes over batch * (L - 1) positions (TRL scores every position and masks); device ('cpu'
        or 'cuda') is where the step runs: TRL's fused head keeps 8x more on CPU than on a GPU.
    lm_head_grad = V * h * 4 when the (tied) embedding trains: TRL's fused head accumulates it in fp32 at the
        very start of the backward pass, on top of the activations.
    TRL's GRPOConfig turns gradient checkpointing ON by default: pass grad_checkpointing=True for train_with_trl.
    Returns a dict of ints (bytes) plus 'trainable_params' and 'params' (counts) and 'total' (the peak).
    """
    for name, v in (("batch", batch), ("prompt_len", prompt_len), ("completion_len", completion_len)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name}={v!r}: must be an integer >= 1")
    if not isinstance(lora_rank, int) or isinstance(lora_rank, bool) or lora_rank < 0:
        raise ValueError(f"lora_rank={lora_rank!r}: must be an integer >= 0 (0 = full fine-tune)")
    if isinstance(param_bytes, bool) or param_bytes not in (1, 2, 4):
        raise ValueError(f"param_bytes={param_bytes!r}: must be 4 (fp32), 2 (bf16/fp16) or 1 (int8)")
    if not isinstance(optimizer, str) or optimizer not in OPTIMIZER_BYTES:
        raise ValueError(f"optimizer={optimizer!r} is unknown; known: {sorted(OPTIMIZER_BYTES)}")
    for name, flag in (("grad_checkpointing", grad_checkpointing), ("ref_copy", ref_copy)):
        checks.flag("estimate_memory", name, flag)
    if not (lora_targets == "all-linear" or (isinstance(lora_targets, (list, tuple)) and lora_targets and
                                             all(isinstance(t, str) for t in lora_targets))):
        raise ValueError(f"lora_targets={lora_targets!r}: must be 'all-linear' or a list of layer names")
    d, model = _dims(model_or_config)
    params = sum(p.numel() for p in model.parameters()) if model is not None else count_params(d)
    L, h = prompt_len + completion_len, d["h"]
    adapter, per_block = lora_params(d, model, lora_rank, lora_targets) if lora_rank else (0, 0)
    trainable = adapter if lora_rank else params
    a = _layer_activations(d, L, lora_rank, per_block)
    per_token = (d["layers"] * h + a if grad_checkpointing else d["layers"] * a) + 3 * h
    est = dict(params=params, trainable_params=trainable,
               weights=params * param_bytes + adapter * 4,
               gradients=trainable * 4,
               optimizer=trainable * OPTIMIZER_BYTES[optimizer] + (trainable * 4 if param_bytes < 4 else 0),
               reference=params * param_bytes if ref_copy and not lora_rank else 0,
               activations=batch * L * per_token * param_bytes,
               logits=_logits_bytes(d, batch * (L - 1), logits, str(device).split(":")[0]),
               lm_head_grad=0 if lora_rank else d["vocab"] * h * 4,
               kv_cache=2 * d["layers"] * batch * L * d["kv"] * param_bytes)
    static = est["weights"] + est["optimizer"] + est["reference"]
    est["generation_peak"] = static + est["kv_cache"] + batch * d["vocab"] * 4 * 2  # + last-token logits, probs
    est["train_peak"] = static + max(est["activations"] + est["logits"] + est["lm_head_grad"], est["gradients"])
    est["total"] = max(est["generation_peak"], est["train_peak"])
    return est


def _size(n):
    return f"{n / 2**30:.2f} GB" if n >= 2**30 else f"{n / 2**20:.1f} MB"


def _estimate(where, est):
    """est after checking that it is estimate_memory()'s dict: every component a number of bytes >= 0."""
    keys = ("params", "trainable_params", "weights", "gradients", "optimizer", "reference", "activations", "logits",
            "lm_head_grad", "kv_cache", "generation_peak", "train_peak", "total")
    if not isinstance(est, dict) or any(k not in est for k in keys):
        raise ValueError(f"{where}: est must be estimate_memory()'s dict, got {checks._short(est)}")
    for k in keys:
        checks.number(where, f"est[{k!r}]", est[k], lo=0)
    return est


def format_estimate(est):
    """A short table of an estimate_memory() result."""
    _estimate("format_estimate", est)
    rows = [f"{'parameters':14s} {est['params'] / 1e6:9.1f} M  ({est['trainable_params'] / 1e6:.2f} M trainable)"]
    for k in ("weights", "gradients", "optimizer", "reference", "activations", "logits", "lm_head_grad",
              "kv_cache", "generation_peak", "train_peak", "total"):
        rows.append(f"{k:14s} {_size(est[k]):>12s}")
    return "\n".join(rows)


def available_ram():
    """Bytes of RAM available to a new allocation: Linux's MemAvailable, else psutil's, else None."""
    try:
        with open("/proc/meminfo") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        pass
    try:
        import psutil
        return psutil.virtual_memory().available
    except ImportError:
        return None


def check_fits(est, available_bytes=None, device="cpu"):
    """True if est['total'] fits in available_bytes (default: free RAM on cpu, free GPU memory on cuda);
    otherwise warns (utils.CourseWarning, which setup() lets through) with what to change, and returns False."""
    _estimate("check_fits", est)
    if available_bytes is not None:
        checks.number("check_fits", "available_bytes", available_bytes, lo=0)
    if not isinstance(device, str):
        raise ValueError(f"check_fits: device must be 'cpu' or 'cuda' (a str), got {checks._short(device)}")
    where = "" if available_bytes is not None else f" on {device}"
    if available_bytes is None:
        if device == "cpu":
            available_bytes = available_ram()
        elif str(device).startswith("cuda"):
            available_bytes = torch.cuda.mem_get_info(torch.device(device))[0]
        else:
            raise ValueError(f"device={device!r}: pass 'cpu', 'cuda' or available_bytes")
    if available_bytes is None or est["total"] <= available_bytes:   # unknown free memory: nothing to compare
        return True
    warnings.warn(f"estimated peak {_size(est['total'])} > {_size(available_bytes)} available{where}: "
                  f"train a LoRA adapter (lora_rank=16) instead of every weight, use a smaller group_size or "
                  f"batch_size, shorter completions (max_new_tokens), or gradient checkpointing", CourseWarning,
                  stacklevel=2)
    return False

"""A lean decoding loop for the course's GPT-2 models: the same weights and the same arithmetic as the
transformers forward pass, without its per-call overhead.

Why: the course's models are tiny (4 layers, 128 wide, an 18-token vocabulary), so one decoding step of
transformers' `GPT2LMHeadModel` spends most of its time in Python (mask building, cache objects, output
classes), not in arithmetic. Here the key/value cache is one preallocated tensor per layer and each step is a
dozen tensor calls; `tests/test_decode.py` checks the logits against the transformers forward pass, and
`benchmarks/trace_sampling.py` measures the speed against HF `generate`.

The same arithmetic serves training (`completion_logits`): the log-probs of a batch of completions, each
distinct prompt run once for its whole group instead of once per completion (about half the work of
transformers' forward pass for the course's GRPO batches; the same values and gradients up to the order of
floating-point additions).

Only GPT-2 (`model_type == "gpt2"`, no cross-attention, the default attention scaling) is handled;
`supports(model)` says whether a model qualifies, and `policy.sample` falls back to the transformers forward
for every other model (a hub model in Lab 08, a Llama-family model in Lab 07), and so does
`policy.completion_logprobs`.
"""
import math

import torch
import torch.nn.functional as F


def supports(model):
    """True if `model` is a GPT-2 LM this module computes exactly as transformers does."""
    cfg = getattr(model, "config", None)
    return (
        cfg is not None
        and getattr(cfg, "model_type", None) == "gpt2"
        and hasattr(model, "transformer") and hasattr(model, "lm_head")
        and not getattr(cfg, "add_cross_attention", False)
        and getattr(cfg, "scale_attn_weights", True)
        and not getattr(cfg, "scale_attn_by_inverse_layer_idx", False)
        and not getattr(cfg, "reorder_and_upcast_attn", False)
        and getattr(cfg, "activation_function", "") in ("gelu_new", "gelu_pytorch_tanh", "gelu")
        and not any(hasattr(m, "lora_A") for m in model.modules())  # a LoRA adapter (Lab 08) lives in its layers
    )


def _act(cfg):
    if cfg.activation_function == "gelu":
        return F.gelu
    return lambda x: F.gelu(x, approximate="tanh")  # gelu_new and gelu_pytorch_tanh are the tanh form


def _qkv(blk, x, H, hd, eps):
    """The attention half's input: x [N, L, C] -> q, k, v, each [N, H, L, hd]."""
    N, L, C = x.shape
    h = F.layer_norm(x, (C,), blk.ln_1.weight, blk.ln_1.bias, eps)
    qkv = torch.addmm(blk.attn.c_attn.bias, h.reshape(-1, C), blk.attn.c_attn.weight).view(N, L, 3, H, hd)
    q, k, v = qkv.permute(2, 0, 3, 1, 4)
    return q, k, v


def _rest(blk, x, q, k, v, attn_mask, act, eps):
    """The rest of a block: x [N, L, C], q [N, H, L, hd], keys/values k, v [N, H, S, hd], attn_mask [N, 1, L, S]
    bool -> [N, L, C]."""
    N, L, C = x.shape
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=1.0 / math.sqrt(q.shape[-1]))
    a = a.transpose(1, 2).reshape(-1, C)  # [N*L, C]
    x = x + torch.addmm(blk.attn.c_proj.bias, a, blk.attn.c_proj.weight).view(N, L, C)
    h = F.layer_norm(x, (C,), blk.ln_2.weight, blk.ln_2.bias, eps).reshape(-1, C)
    h = act(torch.addmm(blk.mlp.c_fc.bias, h, blk.mlp.c_fc.weight))
    return x + torch.addmm(blk.mlp.c_proj.bias, h, blk.mlp.c_proj.weight).view(N, L, C)


def _prompt_attention(real):
    """real [N, P] bool (left-padded prompts) -> [N, P, P] bool: causal over the real keys; a padding query
    attends to itself only, so that its (unused) output stays finite."""
    P = real.shape[1]
    causal = torch.ones(P, P, dtype=torch.bool, device=real.device).tril()
    return (causal[None] & real[:, None, :]) | torch.eye(P, dtype=torch.bool, device=real.device)[None]


class Decoder:
    """Prefill a left-padded prompt batch, then one token at a time, with a static key/value cache.

    d = Decoder(model, n_rows, max_len); logits = d.prefill(ids, mask, pos)  # [N, V] at each row's last token
    logits = d.step(tok)                                                 # [N, V] after appending tok [N]
    `keep(rows)` drops finished rows from every buffer (rows: LongTensor of the rows to keep, in order);
    `repeat(k)` turns each row into k (a prompt prefilled once for its k completions).
    """

    def __init__(self, model, n_rows, max_len):
        cfg = model.config
        tr = model.transformer
        self.tr, self.lm_head = tr, model.lm_head
        self.H = cfg.n_head
        self.hd = cfg.n_embd // cfg.n_head
        self.act = _act(cfg)
        self.eps = cfg.layer_norm_epsilon
        self.max_len = max_len
        p = next(model.parameters())
        shape = (n_rows, self.H, max_len, self.hd)
        self.k = [torch.zeros(shape, dtype=p.dtype, device=p.device) for _ in tr.h]  # per layer [N, H, S, hd]
        self.v = [torch.zeros(shape, dtype=p.dtype, device=p.device) for _ in tr.h]
        self.key_ok = torch.zeros(n_rows, max_len, dtype=torch.bool, device=p.device)  # [N, S] real key?
        self.pos = None  # [N] position id of the next token
        self.S = 0       # cache positions filled

    def _block(self, i, blk, x, attn_mask, s0):
        """x [N, L, C] at cache positions s0..s0+L-1 -> [N, L, C]."""
        q, k, v = _qkv(blk, x, self.H, self.hd, self.eps)  # each [N, H, L, hd]
        L = x.shape[1]
        self.k[i][:, :, s0:s0 + L] = k
        self.v[i][:, :, s0:s0 + L] = v
        S = s0 + L
        return _rest(blk, x, q, self.k[i][:, :, :S], self.v[i][:, :, :S], attn_mask, self.act, self.eps)

    def _forward(self, ids, pos, attn_mask):
        """ids, pos [N, L]; attn_mask [N, 1, L, S] bool -> logits [N, V] of the last position."""
        tr = self.tr
        x = tr.wte(ids) + tr.wpe(pos)
        s0 = self.S
        for i, blk in enumerate(tr.h):
            x = self._block(i, blk, x, attn_mask, s0)
        self.S = s0 + ids.shape[1]
        x = F.layer_norm(x[:, -1], (x.shape[-1],), tr.ln_f.weight, tr.ln_f.bias, self.eps)
        return self.lm_head(x)

    def prefill(self, ids, mask, pos):
        """ids, mask, pos [N, P]: left-padded ids, their mask and position ids (policy.position_ids_from_mask)
        -> logits [N, V] at each row's last token."""
        N, P = ids.shape
        if P > self.max_len:
            raise ValueError(f"prompt of {P} tokens does not fit a cache of {self.max_len}")
        real = mask.bool()
        self.key_ok[:, :P] = real
        logits = self._forward(ids, pos, _prompt_attention(real)[:, None])  # attn [N, 1, P, P]
        self.pos = pos[:, -1] + 1
        return logits

    def step(self, tok):
        """tok [N] appended to every row -> logits [N, V] for the token after it."""
        if self.S >= self.max_len:
            raise ValueError(f"the cache of {self.max_len} positions is full")
        self.key_ok[:, self.S] = True
        attn = self.key_ok[:, None, None, :self.S + 1]  # [N, 1, 1, S+1]
        logits = self._forward(tok[:, None], self.pos[:, None], attn)
        self.pos = self.pos + 1
        return logits

    def repeat(self, k):
        """Each row becomes k consecutive rows (after prefill: a prompt's k completions share its prefill)."""
        self.k = [x.repeat_interleave(k, 0) for x in self.k]
        self.v = [x.repeat_interleave(k, 0) for x in self.v]
        self.key_ok = self.key_ok.repeat_interleave(k, 0)
        self.pos = self.pos.repeat_interleave(k, 0)

    def keep(self, rows):
        """Keep only `rows` (LongTensor [n], indices into the current rows) in every buffer."""
        self.k = [k.index_select(0, rows) for k in self.k]
        self.v = [v.index_select(0, rows) for v in self.v]
        self.key_ok = self.key_ok.index_select(0, rows)
        self.pos = self.pos.index_select(0, rows)


def completion_logits(model, prompt_ids, prompt_mask, prompt_pos, completion_ids):
    """Logits [N, T, V] of the next-token distribution at each completion position (position j scores token j),
    for training: each distinct prompt is run through the model once, however many completions share it.

    prompt_ids/prompt_mask/prompt_pos [N, P] left padded, with their position ids (policy.position_ids_from_mask),
    completion_ids [N, T]; rows whose prompt (ids and mask) equals the
    row before's share its computation (a GRPO group's G rows are one prompt). The completion tokens attend to
    their prompt's keys and values and to each other, causally; a padding token after EOS may attend to
    anything (its log-prob is masked out by the caller). In a group of G completions of a P-token prompt this
    computes n_prompts * P + N * (T - 1) positions where the full forward computes N * (P + T): about half the
    work for Lab 01 (P about 9, T at most 8, G = 8). The same sums as transformers' forward pass up to the
    order of floating-point additions (tests/test_decode.py compares values and gradients)."""
    cfg = model.config
    tr, H = model.transformer, cfg.n_head
    hd, eps, act = cfg.n_embd // cfg.n_head, cfg.layer_norm_epsilon, _act(cfg)
    N, P = prompt_ids.shape
    T = completion_ids.shape[1]
    dev = prompt_ids.device
    same = torch.zeros(N, dtype=torch.bool, device=dev)   # [N] the row's prompt is the row before's
    same[1:] = (prompt_ids[1:] == prompt_ids[:-1]).all(1) & (prompt_mask[1:] == prompt_mask[:-1]).all(1)
    first = (~same).nonzero().squeeze(-1)                # [n] one row per distinct prompt
    grp = (~same).long().cumsum(0) - 1                   # [N] the prompt of each row
    real = prompt_mask[first].bool()                     # [n, P]
    attn_p = _prompt_attention(real)                     # [n, P, P], as Decoder.prefill
    x = tr.wte(prompt_ids[first]) + tr.wpe(prompt_pos[first])  # [n, P, C]
    kv = []
    for blk in tr.h:                                     # the prompts, once each
        q, k, v = _qkv(blk, x, H, hd, eps)               # [n, H, P, hd]
        x = _rest(blk, x, q, k, v, attn_p[:, None], act, eps)
        kv.append((k, v))
    last = F.layer_norm(x[:, -1], (x.shape[-1],), tr.ln_f.weight, tr.ln_f.bias, eps)  # [n, C] scores token 0
    first_logits = model.lm_head(last)[grp]              # [N, V]
    if T == 1:
        return first_logits[:, None]
    # the completions: tokens 0..T-2 (the last one scores nothing), at positions after their prompt's
    L = T - 1
    cpos = real.sum(1)[grp][:, None] + torch.arange(L, device=dev)[None]  # [N, L]
    y = tr.wte(completion_ids[:, :L]) + tr.wpe(cpos)     # [N, L, C]
    causal = torch.ones(L, L, dtype=torch.bool, device=dev).tril()
    attn_c = torch.cat([real[grp][:, None, :].expand(N, L, P), causal[None].expand(N, L, L)], 2)[:, None]
    for blk, (kp, vp) in zip(tr.h, kv):                  # attn_c [N, 1, L, P + L]
        q, k, v = _qkv(blk, y, H, hd, eps)               # [N, H, L, hd]
        y = _rest(blk, y, q, torch.cat([kp[grp], k], 2), torch.cat([vp[grp], v], 2), attn_c, act, eps)
    rest = model.lm_head(F.layer_norm(y, (y.shape[-1],), tr.ln_f.weight, tr.ln_f.bias, eps))  # [N, L, V]
    return torch.cat([first_logits[:, None], rest], 1)   # [N, T, V]

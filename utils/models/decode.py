"""A lean decoding loop for the course's GPT-2 models: the same weights and the same arithmetic as the
transformers forward pass, without its per-call overhead.

Why: the course's models are tiny (4 layers, 128 wide, an 18-token vocabulary), so one decoding step of
transformers' `GPT2LMHeadModel` spends most of its time in Python (mask building, cache objects, output
classes), not in arithmetic. Here the key/value cache is one preallocated tensor per layer and each step is a
dozen tensor calls; `tests/test_decode.py` checks the logits against the transformers forward pass, and
`benchmarks/trace_sampling.py` measures the speed against HF `generate`.

Only GPT-2 (`model_type == "gpt2"`, no cross-attention, the default attention scaling) is handled;
`supports(model)` says whether a model qualifies, and `policy.sample` falls back to the transformers forward
for every other model (a hub model in Lab 08, a Llama-family model in Lab 07).
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


class Decoder:
    """Prefill a left-padded prompt batch, then one token at a time, with a static key/value cache.

    d = Decoder(model, n_rows, max_len); logits = d.prefill(ids, mask, pos)  # [N, V] at each row's last token
    logits = d.step(tok)                                                 # [N, V] after appending tok [N]
    `keep(rows)` drops finished rows from every buffer (rows: LongTensor of the rows to keep, in order).
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
        N, L, C = x.shape
        h = F.layer_norm(x, (C,), blk.ln_1.weight, blk.ln_1.bias, self.eps)
        qkv = torch.addmm(blk.attn.c_attn.bias, h.reshape(-1, C), blk.attn.c_attn.weight).view(N, L, 3, self.H,
                                                                                               self.hd)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each [N, H, L, hd]
        self.k[i][:, :, s0:s0 + L] = k
        self.v[i][:, :, s0:s0 + L] = v
        S = s0 + L
        a = F.scaled_dot_product_attention(q, self.k[i][:, :, :S], self.v[i][:, :, :S], attn_mask=attn_mask,
                                           scale=1.0 / math.sqrt(self.hd))  # [N, H, L, hd]
        a = a.transpose(1, 2).reshape(-1, C)
        x = x + torch.addmm(blk.attn.c_proj.bias, a, blk.attn.c_proj.weight).view(N, L, C)
        h = F.layer_norm(x, (C,), blk.ln_2.weight, blk.ln_2.bias, self.eps).reshape(-1, C)
        h = self.act(torch.addmm(blk.mlp.c_fc.bias, h, blk.mlp.c_fc.weight))
        return x + torch.addmm(blk.mlp.c_proj.bias, h, blk.mlp.c_proj.weight).view(N, L, C)

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
        causal = torch.ones(P, P, dtype=torch.bool, device=ids.device).tril()
        # a padding query attends to itself only, so that its (unused) output stays finite
        attn = (causal[None] & real[:, None, :]) | torch.eye(P, dtype=torch.bool, device=ids.device)[None]
        logits = self._forward(ids, pos, attn[:, None])  # attn [N, 1, P, P]
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

    def keep(self, rows):
        """Keep only `rows` (LongTensor [n], indices into the current rows) in every buffer."""
        self.k = [k.index_select(0, rows) for k in self.k]
        self.v = [v.index_select(0, rows) for v in self.v]
        self.key_ok = self.key_ok.index_select(0, rows)
        self.pos = self.pos.index_select(0, rows)

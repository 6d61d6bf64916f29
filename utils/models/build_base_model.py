"""Build the shipped base model: a small GPT-2 pre-trained on arithmetic text, stopped early.

    python -m utils.models.build_base_model           # ~2-4 minutes on a 2-core CPU

It trains on "prompt answer<eos>" strings from the train split (plus 5% fresh 3-digit
problems, never OOD-split ones), and checks sampled pass@1 (temperature 1) on the *valid*
split every EVAL_EVERY steps. It stops at the first check where pass@1 reaches TARGET, so
the model is right sometimes but not always: room for RL to improve it. The result is
written in standard HF format (safetensors) to data/base_model/.
"""
import json
import os
import random
import time

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel

from utils import BASE_MODEL_DIR
from utils.eval.metrics import evaluate
from utils.models.policy import char_tokenizer
from utils.tasks.arithmetic import load_split, pretrain_problem

CONFIG = dict(
    seed=0, n_layer=4, n_head=4, n_embd=128, batch_size=128, lr=1e-3, max_steps=6000,
    eval_every=50, target_pass1=0.25, p_big=0.05, label_smoothing=0.0,
)


def build(out_dir=BASE_MODEL_DIR, **overrides):
    cfg = dict(CONFIG, **overrides)
    torch.manual_seed(cfg["seed"])
    rng = random.Random(cfg["seed"])
    tok = char_tokenizer()
    model = GPT2LMHeadModel(GPT2Config(
        vocab_size=len(tok), n_positions=32, n_embd=cfg["n_embd"], n_layer=cfg["n_layer"], n_head=cfg["n_head"],
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        activation_function="gelu_pytorch_tanh",  # GPT-2's gelu, fused: same values, faster on CPU
        bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id))
    train = load_split("train")
    train_rows = [{"prompt": p, "answer": a} for p, a in zip(train["prompt"], train["answer"])]
    ood_prompts = set(load_split("ood")["prompt"])
    valid = load_split("valid")
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=0.0)

    t0, log = time.time(), []
    for step in range(1, cfg["max_steps"] + 1):
        batch = [pretrain_problem(rng, train_rows, ood_prompts, cfg["p_big"]) for _ in range(cfg["batch_size"])]
        p_ids = [tok(b["prompt"], add_special_tokens=False)["input_ids"] for b in batch]
        a_ids = [tok(b["answer"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for b in batch]
        L = max(len(p) + len(a) for p, a in zip(p_ids, a_ids))
        ids = torch.full((len(batch), L), tok.pad_token_id)
        labels = torch.full((len(batch), L), -100)
        mask = torch.zeros(len(batch), L, dtype=torch.long)
        for i, (p, a) in enumerate(zip(p_ids, a_ids)):  # right padding is fine here: no sampling
            ids[i, : len(p) + len(a)] = torch.tensor(p + a)
            labels[i, len(p) : len(p) + len(a)] = torch.tensor(a)  # loss on the answer only
            mask[i, : len(p) + len(a)] = 1
        logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]   # [B, L-1, V]
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                               ignore_index=-100, label_smoothing=cfg["label_smoothing"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % cfg["eval_every"] == 0:
            ev = evaluate(model, tok, valid["prompt"], valid["answer"], k=4, seed=step)
            log.append({"step": step, "loss": round(loss.item(), 4), "valid_pass@1": round(ev["pass@1"], 4)})
            print(log[-1], f"{time.time() - t0:.0f}s", flush=True)
            if ev["pass@1"] >= cfg["target_pass1"]:
                break
    model.eval()
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tok.save_pretrained(out_dir)
    with open(os.path.join(out_dir, "build_log.json"), "w") as f:
        json.dump({"config": cfg, "log": log, "seconds": round(time.time() - t0, 1)}, f, indent=1)
    return model, tok


if __name__ == "__main__":
    import sys

    build(**{k: type(CONFIG[k])(v) if k in CONFIG else v for k, v in (a.split("=", 1) for a in sys.argv[1:])})

"""Supervised fine-tuning on text: the shipped models' pre-training (utils.runs.build_base_model) and Lab 09's
generations of self-training (utils.rl.selftrain) both train a model on (prompt, completion) pairs with the
cross-entropy of the completion's tokens."""
import random

import torch
import torch.nn.functional as F

from utils import checks


def pretrain_batch(tok, batch):
    """A pre-training batch as tensors (ids, labels, mask), each [B, L], right padded. batch: (prompt, completion)
    pairs, or (prompt, completion, loss) with loss one 0/1 per completion character (the character tokenizer: a
    token a character). Labels are -100 (no loss) on the prompt, the padding and the characters whose loss is 0 (a
    tool's answers); the completion's other tokens and its EOS carry loss."""
    p_ids = [tok(b[0], add_special_tokens=False)["input_ids"] for b in batch]
    a_ids = [tok(b[1], add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for b in batch]
    keep = [list(b[2] if len(b) > 2 else [1] * len(a[:-1])) + [1] for b, a in zip(batch, a_ids)]
    if any(len(k) != len(a) for k, a in zip(keep, a_ids)):
        raise ValueError("pretrain_batch: a completion's loss must have one 0/1 per token (a character tokenizer)")
    L = max(len(p) + len(a) for p, a in zip(p_ids, a_ids))
    ids = torch.full((len(batch), L), tok.pad_token_id)
    labels = torch.full((len(batch), L), -100)
    mask = torch.zeros(len(batch), L, dtype=torch.long)
    for i, (p, a) in enumerate(zip(p_ids, a_ids)):  # right padding is fine here: no sampling
        ids[i, : len(p) + len(a)] = torch.tensor(p + a)
        labels[i, len(p) : len(p) + len(a)] = torch.where(torch.tensor(keep[i]) == 1, torch.tensor(a), -100)
        mask[i, : len(p) + len(a)] = 1
    return ids, labels, mask


def text_loss(model, ids, labels, mask, label_smoothing=0.0):
    """The mean cross-entropy (nats a token) of the labelled tokens: ids, labels, mask [B, L] from pretrain_batch."""
    logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]   # [B, L-1, V]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100,
                           label_smoothing=label_smoothing)


def fine_tune(model, tokenizer, pairs, steps, batch_size=64, lr=3e-4, seed=0):
    """Train `model` in place on `pairs` ((prompt, completion) pairs) for `steps` AdamW steps of batch_size pairs
    each, drawn in a seeded shuffled order and cycled when the pairs run out (so every run takes the same
    compute, whatever the number of pairs). Returns the steps' losses. No pairs: no steps, [] back."""
    where = "fine_tune"
    checks.model(where, "model", model)
    checks.tokenizer(where, "tokenizer", tokenizer)
    pairs = checks.sequence(where, "pairs", pairs)
    if not all(isinstance(p, (tuple, list)) and len(p) in (2, 3) and isinstance(p[0], str) and isinstance(p[1], str)
               for p in pairs):
        raise ValueError(f"{where}: pairs must be (prompt, completion) pairs of strings, got {checks._short(pairs)}")
    steps = checks.number(where, "steps", steps, lo=0, hi=1_000_000, integer=True)
    batch_size = checks.number(where, "batch_size", batch_size, lo=1, hi=100_000, integer=True)
    lr = checks.number(where, "lr", lr, lo=0, hi=1.0)
    seed = checks.number(where, "seed", seed, lo=0, hi=2**63 - 1, integer=True)
    if not pairs or not steps:
        return []
    from utils.models.policy import positions
    limit, longest = positions(model), max(len(tokenizer(p[0] + p[1], add_special_tokens=False)["input_ids"]) + 1
                                           for p in pairs)
    if limit and longest > limit:
        raise ValueError(f"{where}: the longest of pairs is {longest} tokens with its EOS and the model has {limit} "
                         f"positions: shorten the pairs")
    rng, order, losses = random.Random(seed), [], []
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    for _ in range(steps):
        batch = []
        while len(batch) < batch_size:
            if not order:
                order = list(range(len(pairs)))
                rng.shuffle(order)
            batch.append(pairs[order.pop()])
        loss = text_loss(model, *pretrain_batch(tokenizer, batch))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses

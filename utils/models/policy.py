"""The policy: loading a causal LM and its tokenizer, batched sampling, completion log-probs.

Works with any Hugging Face causal LM (the shipped character-level GPT-2, or the hub's
`gpt2` when online). Prompts are LEFT padded, and position ids are always computed from
the attention mask, in sampling and in the training forward pass alike, so the policy
that is trained is exactly the one that sampled.
"""
import os
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from utils import (
    BASE_MODEL_DIR,
    CHECK_MODEL_DIR,
    LOOKUP_MODEL_DIR,
    MIX_MODEL_DIR,
    PROGRAM_MODEL_DIR,
    TOOL_MODEL_DIR,
    TRACE_MODEL_DIR,
    TRACE_SIZES,
    checks,
)
from utils.models import decode

SHIPPED = "rlvr-base"  # the name that means "the model shipped in data/base_model"
TRACE = "rlvr-trace"   # the scratchpad task's model (Labs 06-07), shipped in data/trace_model
CHECK = "rlvr-check"   # its free-length variant (Lab 06's length study), shipped in data/check_model
MIX = "rlvr-mix"       # three tasks in one model (utils.tasks.mix; Lab 07's task mix), shipped in data/mix_model
TOOL = "rlvr-tool"     # the scratchpad task with a calculator (utils.tasks.tools; Lab 09), shipped in data/tool_model
LOOKUP = "rlvr-lookup"  # a lookup and a calculator (utils.tasks.lookup; Lab 09), shipped in data/lookup_model
PROGRAM = "rlvr-program"  # one-line programs from two values (utils.tasks.programs; Lab 11), in data/program_model


def char_tokenizer(alphabet="0123456789+-*= ", max_length=64):
    """A character-level tokenizer (tokenizers library) wrapped so AutoTokenizer can load it.

    Every character of `alphabet` is one token; <pad>=0, <eos>=1, <unk>=2.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2}
    for ch in alphabet:
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>",
        padding_side="left", model_max_length=max_length,
    )


def hub_reachable(timeout=3.0):
    """True if the model hub answers a TCP connection within `timeout` seconds (a number > 0, at most 60)."""
    import socket
    from urllib.parse import urlparse

    timeout = checks.number("hub_reachable", "timeout", timeout, lo=0, hi=60, lo_open=True)

    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def load_policy(name=SHIPPED, device="cpu"):
    """(model, tokenizer) for a shipped model ('rlvr-base': the arithmetic task's; 'rlvr-trace': the
    scratchpad task's; 'rlvr-check': its free-length variant's; 'rlvr-mix': the task mix's; 'rlvr-tool': the
    calculator's; 'rlvr-lookup': the lookup task's; 'rlvr-program': the program task's; a name of
    utils.TRACE_SIZES such as 'gpt2-6x192': Lab 07's sizes of it), a local path or a hub name.

    A hub name is looked up in the local cache first; if it is not there and the hub cannot be
    reached, this fails at once with an error that points to the shipped model. The tokenizer
    is set to left padding and gets a pad token if it has none (gpt2 has none).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name = checks.path("load_policy", "name", name)
    device = _device("load_policy", device)
    shipped = {SHIPPED: (BASE_MODEL_DIR, ""), TRACE: (TRACE_MODEL_DIR, " task=scratchpad"),
               CHECK: (CHECK_MODEL_DIR, " task=scratchpad-check"), MIX: (MIX_MODEL_DIR, " task=mix"),
               TOOL: (TOOL_MODEL_DIR, " task=tool"), LOOKUP: (LOOKUP_MODEL_DIR, " task=lookup"),
               PROGRAM: (PROGRAM_MODEL_DIR, " task=programs")} | {
        size: (path, f" size={size}") for size, path in TRACE_SIZES.items()}
    path = shipped[name][0] if name in shipped else name
    if name in shipped and not os.path.exists(os.path.join(path, "config.json")):
        raise FileNotFoundError(f"the shipped model {name!r} is missing from {path}; rebuild it with "
                                f"`python -m utils.runs.build_base_model{shipped[name][1]}`")

    def load(**kw):
        return AutoTokenizer.from_pretrained(path, **kw), AutoModelForCausalLM.from_pretrained(path, **kw)

    try:
        tok, model = load(local_files_only=True)
    except Exception as e:  # noqa: BLE001 (a damaged file raises the reader's own error type)
        if not os.path.isdir(path) and not isinstance(e, OSError):
            raise
        if os.path.isdir(path):  # a folder that is there but does not load: say so, not "no network"
            rebuild = (f"; rebuild it with `python -m utils.runs.build_base_model{shipped[name][1]}`"
                       if name in shipped else "")
            raise OSError(f"could not load the model folder {path} (name={name!r}; {type(e).__name__}: "
                          f"{str(e)[:200]}): a file in it is missing or damaged{rebuild}") from None
        if not hub_reachable():
            raise OSError(
                f"could not load model name={name!r}: it is not a local model folder or cached download, and the "
                f"model hub cannot be reached from here (no network). Offline, use the shipped model: "
                f"load_policy('{SHIPPED}') (files in {BASE_MODEL_DIR}).") from None
        try:
            tok, model = load()
        except OSError as e2:
            raise OSError(f"could not load model name={name!r} from the hub: {str(e2)[:300]}. "
                          f"The shipped model is load_policy('{SHIPPED}').") from None
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model.to(device), tok


def _device(where, device):
    """device as a torch.device after checking: a device this machine has ('cpu', or 'cuda' with a GPU)."""
    if not isinstance(device, (str, torch.device)):
        raise ValueError(f"{where}: device must be 'cpu' or 'cuda' (a str or torch.device), got "
                         f"{checks._short(device)}")
    try:
        device = torch.device(device)
    except RuntimeError:
        raise ValueError(f"{where}: device={device!r} is not a device name ('cpu', 'cuda', 'cuda:0')") from None
    if device.type == "cuda" and not (torch.cuda.is_available() and (device.index or 0) < torch.cuda.device_count()):
        raise ValueError(f"{where}: device={str(device)!r}: there is no such CUDA GPU here; use 'cpu'")
    return device


def position_ids_from_mask(mask):
    """[B, T] attention mask (1 = real token) -> [B, T] position ids: 0 at each row's first
    real token, counting up over real tokens; left padding gets position 0."""
    return (mask.long().cumsum(-1) - 1).clamp(min=0)


@dataclass
class Rollout:
    """K completions for each of several prompts, flattened to N = n_prompts * K rows.

    Row i is a completion of prompt i // K, so groups are contiguous.
    """
    prompt_ids: torch.Tensor       # [N, P] left padded
    prompt_mask: torch.Tensor      # [N, P] 1 = real token
    completion_ids: torch.Tensor   # [N, T] pad after EOS
    completion_mask: torch.Tensor  # [N, T] 1 up to and including EOS
    logprobs: torch.Tensor         # [N, T] log-prob of each sampled token under the sampler (0 where masked)
    texts: list                    # N decoded completions, EOS and padding removed
    truncated: torch.Tensor | None = None  # [N] bool: stopped by max_new_tokens before writing EOS
    loss_mask: torch.Tensor | None = None  # [N, T] 1 on the tokens that carry loss; None = completion_mask.
    # A multi-turn rollout keeps an environment's tokens in completion_mask (the model reads them) and out of
    # loss_mask (it did not write them).


def select_rows(ro, rows):
    """The Rollout of rows [n] (a LongTensor of row indices) of `ro`."""
    rows = rows.to(ro.completion_ids.device)
    pick = lambda x: None if x is None else x.index_select(0, rows)  # noqa: E731
    return Rollout(pick(ro.prompt_ids), pick(ro.prompt_mask), pick(ro.completion_ids), pick(ro.completion_mask),
                   pick(ro.logprobs), [ro.texts[i] for i in rows.tolist()], pick(ro.truncated), pick(ro.loss_mask))


def concat_rollouts(rollouts, pad_id):
    """One Rollout with the rows of each in turn: prompts left padded and completions right padded (with
    pad_id, mask 0, log-prob 0) to the longest of them."""
    P = max(r.prompt_ids.shape[1] for r in rollouts)
    T = max(r.completion_ids.shape[1] for r in rollouts)

    def left(x, fill, width):   # [n, w] -> [n, width], new columns on the left
        return F.pad(x, (width - x.shape[1], 0), value=fill)

    def right(x, fill, width):  # [n, w] -> [n, width], new columns on the right
        return F.pad(x, (0, width - x.shape[1]), value=fill)
    return Rollout(torch.cat([left(r.prompt_ids, pad_id, P) for r in rollouts]),
                   torch.cat([left(r.prompt_mask, 0, P) for r in rollouts]),
                   torch.cat([right(r.completion_ids, pad_id, T) for r in rollouts]),
                   torch.cat([right(r.completion_mask, 0, T) for r in rollouts]),
                   torch.cat([right(r.logprobs, 0.0, T) for r in rollouts]),
                   [t for r in rollouts for t in r.texts],
                   None if any(r.truncated is None for r in rollouts) else torch.cat([r.truncated for r in rollouts]),
                   None if all(r.loss_mask is None for r in rollouts) else
                   torch.cat([right(r.completion_mask if r.loss_mask is None else r.loss_mask, 0, T)
                              for r in rollouts]))


def encode_prompts(tokenizer, prompts, device="cpu"):
    """Left-padded ids [B, P] and mask [B, P] for a list of prompt strings."""
    enc = tokenizer(list(prompts), return_tensors="pt", padding=True, add_special_tokens=False)
    return enc["input_ids"].to(device), enc["attention_mask"].to(device)


def positions(model):
    """How many positions (prompt + completion tokens) the model has, or None if its config does not say."""
    mc = getattr(model, "config", None)
    return getattr(mc, "n_positions", None) or getattr(mc, "max_position_embeddings", None)


def fits(where, name, model, tokenizer, prompts, max_new_tokens):
    """ValueError naming `name` (the prompts' argument) unless the longest of prompts plus max_new_tokens fits
    the model's positions: checked before a run, so that a held-out set that cannot be sampled fails at the start,
    not at the first evaluation."""
    limit = positions(model)
    if limit and prompts:
        P = encode_prompts(tokenizer, prompts)[0].shape[1]
        if P + max_new_tokens > limit:
            raise ValueError(f"{where}: the longest of {name} ({P} tokens) plus max_new_tokens={max_new_tokens} needs "
                             f"{P + max_new_tokens} positions and the model has {limit}: shorten them or lower "
                             f"max_new_tokens")


def _hf_steps(model, ids, mask):
    """Generator: yields logits [N, V] for the next token; is sent the sampled tokens [N]. transformers' forward
    with its KV cache (any causal LM)."""
    N = ids.shape[0]
    attn, pos, inp, past = mask, position_ids_from_mask(mask), ids, None
    while True:
        out = model(input_ids=inp, attention_mask=attn, position_ids=pos, past_key_values=past, use_cache=True)
        past = out.past_key_values
        tok = yield out.logits[:, -1, :].float()
        yield  # answers send()
        inp = tok[:, None]
        pos = pos[:, -1:] + 1
        attn = torch.cat([attn, torch.ones(N, 1, dtype=attn.dtype, device=attn.device)], 1)


def _lean_steps(model, ids, mask, max_new_tokens, done, k=1, compact_at=0.75, min_left=16):
    """As _hf_steps for a GPT-2 model, through decode.Decoder: the same logits to rounding (on this machine,
    bit for bit; matrix products of other shapes may round otherwise on another CPU). ids, mask [n, P]
    hold each prompt once; each is prefilled once and then stands for its k rows (N = n * k).

    Rows that have finished (done [N], updated in place by the caller) are dropped from the batch once they
    are a quarter of it, so that the late steps of trace-length completions run only the long ones
    (benchmarks/trace_sampling.py: 1.7-1.8x HF generate with dropping, 1.3-1.4x without). Dropping is done only
    while at least `min_left` steps remain: it copies the whole cache, and a smaller batch can change a
    matrix product's last bit, so short answers (Labs 01-05, at most 8 new tokens) never drop a row and sample
    what transformers' forward pass samples, draw for draw. The logits of the live rows are written into a full
    [N, V] tensor so that sampling draws the same random numbers whichever rows are live."""
    N = ids.shape[0] * k
    dec = decode.Decoder(model, ids.shape[0], ids.shape[1] + max_new_tokens)
    live = torch.arange(N, device=ids.device)  # the original row of each decoder row
    full = dec.prefill(ids, mask, position_ids_from_mask(mask)).float().repeat_interleave(k, 0)  # [N, V]
    dec.repeat(k)
    t = 0
    while True:
        tok = yield full
        yield
        t += 1
        keep = ~done[live]
        if max_new_tokens - t >= min_left and keep.sum() <= compact_at * len(live):
            rows = keep.nonzero().squeeze(-1)
            dec.keep(rows)
            live = live[rows]
        full[live] = dec.step(tok[live]).float()  # [n_live, V] into the rows they belong to


@torch.no_grad()
def sample(model, tokenizer, prompts, k=1, temperature=1.0, max_new_tokens=8, generator=None, env=None):
    """Sample k completions per prompt, batched, with a KV cache; stop each row at EOS.

    temperature 0 means greedy. Returns a Rollout with N = len(prompts) * k rows.

    env (a multi-turn episode, Lab 09): None, or a callable env(row, ids) -> list of token ids, called after each
    token the policy writes in a row that is still running (row: 0..N-1; ids: that row's completion tokens so far,
    a list of ints). What it returns is appended to the row *as tokens*, one a step, before the policy writes
    again: a tool's answer, or the EOS that ends an episode. Those tokens stay in completion_mask (the model reads
    them) and out of loss_mask (it did not write them), with log-prob 0; nothing already written is ever
    re-tokenised (token in, token out). With env=None nothing changes: the same numbers, bit for bit.
    """
    checks.model("sample", "model", model)
    checks.tokenizer("sample", "tokenizer", tokenizer)
    prompts = checks.strings("sample", "prompts", prompts)
    k = checks.number("sample", "k", k, lo=1, hi=100_000, integer=True)
    temperature = checks.number("sample", "temperature", temperature, lo=0)  # 0 = greedy
    max_new_tokens = checks.number("sample", "max_new_tokens", max_new_tokens, lo=1, integer=True)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"sample: generator must be a torch.Generator or None, got {checks._short(generator)}")
    if env is not None and not callable(env):
        raise ValueError(f"sample: env must be None or a callable env(row, ids) -> token ids, got {checks._short(env)}")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    ids, mask = encode_prompts(tokenizer, prompts, device)
    limit = positions(model)
    if limit and ids.shape[1] + max_new_tokens > limit:
        raise ValueError(f"the longest prompt ({ids.shape[1]} tokens) plus max_new_tokens={max_new_tokens} needs "
                         f"{ids.shape[1] + max_new_tokens} positions and the model has {limit}: shorten the prompts "
                         f"or lower max_new_tokens")
    once = ids, mask                                                       # [n, P] each prompt once
    ids, mask = ids.repeat_interleave(k, 0), mask.repeat_interleave(k, 0)  # [N, P]
    N = ids.shape[0]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    out_ids = torch.full((N, max_new_tokens), pad, dtype=torch.long, device=device)
    out_lp = torch.zeros(N, max_new_tokens, device=device)
    done = torch.zeros(N, dtype=torch.bool, device=device)
    lengths = torch.zeros(N, dtype=torch.long, device=device)
    if env is not None:
        queue = [[] for _ in range(N)]                                     # the environment's tokens still to go
        forced = torch.zeros(N, max_new_tokens, dtype=torch.bool, device=device)  # [N, T] written by env

    if decode.supports(model):  # the lean loop: the same logits to rounding, without transformers' overhead
        step = _lean_steps(model, *once, max_new_tokens, done, k)
    else:
        step = _hf_steps(model, ids, mask)
    for t in range(max_new_tokens):
        logits = next(step)  # [N, V]; rows already done hold stale values and are ignored below
        if temperature == 0:
            logp = F.log_softmax(logits, -1)
            tok = logits.argmax(-1)
        else:
            logp = F.log_softmax(logits / temperature, -1)
            probs = logp.exp()
            if generator is not None and generator.device != probs.device:  # e.g. CPU generator, CUDA model
                probs = probs.to(generator.device)
            tok = torch.multinomial(probs, 1, generator=generator).squeeze(-1).to(device)
        tok = torch.where(done, torch.full_like(tok, pad), tok)
        lp = torch.where(done, 0.0, logp.gather(-1, tok[:, None]).squeeze(-1))
        if env is not None:  # the environment's pending tokens replace the policy's sample
            for i in (j for j in range(N) if queue[j] and not done[j]):
                tok[i], lp[i], forced[i, t] = queue[i].pop(0), 0.0, True
        out_ids[:, t] = tok
        out_lp[:, t] = lp
        lengths += (~done).long()
        done |= tok == eos
        if env is not None:
            for i in (j for j in range(N) if not done[j] and not forced[j, t]):
                reply = env(i, out_ids[i, :t + 1].tolist())
                if reply:
                    queue[i].extend(_token_ids("sample", "env", reply, len(tokenizer)))
        if done.all() or t == max_new_tokens - 1:
            break
        step.send(tok)
    step.close()
    model.train(was_training)

    T = int(lengths.max().item()) if N else 0
    out_ids, out_lp = out_ids[:, :T], out_lp[:, :T]
    cmask = (torch.arange(T, device=device)[None, :] < lengths[:, None]).long()  # [N, T]
    texts = []
    for row, n in zip(out_ids.tolist(), lengths.tolist()):
        row = row[:n]
        if row and row[-1] == eos:
            row = row[:-1]
        texts.append(tokenizer.decode(row, skip_special_tokens=True))
    if env is None:
        return Rollout(ids, mask, out_ids, cmask, out_lp, texts, truncated=~done)  # not done: never wrote EOS
    return Rollout(ids, mask, out_ids, cmask, out_lp, texts, truncated=~done,
                   loss_mask=cmask * (~forced[:, :T]).long())


def _token_ids(where, name, ids, vocab):
    """ids as a list of ints in 0..vocab-1, after checking (ValueError naming `name` otherwise)."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, (list, tuple)) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < vocab for i in ids):
        raise ValueError(f"{where}: {name} must return a list of token ids (ints from 0 to {vocab - 1}), got "
                         f"{checks._short(ids)}")
    return list(ids)


def masked_mean(x, mask):
    """Mean of x [N, T] over positions where mask [N, T] is 1 (0.0 if the mask is empty)."""
    m = mask.to(x.dtype)
    return (x * m).sum() / m.sum().clamp(min=1)


def _dropping_out(model):
    """True if the model is in training mode with a dropout that is on (the lean path has no dropout)."""
    return model.training and any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules())


def _check_rows(model, prompt_ids, prompt_mask, completion_ids, completion_mask):
    """completion_logprobs' input checked where it enters (ValueError naming the argument): a model, and four
    2-D tensors of one row count, each mask the shape of its ids, the ids integers the model has embeddings for."""
    where = "completion_logprobs"
    checks.model(where, "model", model)
    ids = dict(prompt_ids=prompt_ids, prompt_mask=prompt_mask, completion_ids=completion_ids,
               completion_mask=completion_mask)
    for name, x in ids.items():
        if not isinstance(x, torch.Tensor) or x.dim() != 2:
            raise ValueError(f"{where}: {name} must be a 2-D tensor [N, P] or [N, T] (a Rollout's field), got "
                             f"{tuple(x.shape) if isinstance(x, torch.Tensor) else checks._short(x)}")
    checks.same_shape(where, prompt_ids=prompt_ids, prompt_mask=prompt_mask)
    checks.same_shape(where, completion_ids=completion_ids, completion_mask=completion_mask)
    if prompt_ids.shape[0] != completion_ids.shape[0]:
        raise ValueError(f"{where}: prompt_ids has {prompt_ids.shape[0]} rows and completion_ids "
                         f"{completion_ids.shape[0]}: one prompt row per completion")
    emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    V = getattr(emb, "num_embeddings", None)
    for name in ("prompt_ids", "completion_ids"):
        x = ids[name]
        if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
            raise ValueError(f"{where}: {name} must hold token ids (an integer tensor), got {x.dtype}")
        if x.numel() and (x.min() < 0 or (V is not None and x.max() >= V)):
            raise ValueError(f"{where}: {name} holds ids outside the model's vocabulary 0..{V - 1 if V else '?'} "
                             f"(min {int(x.min())}, max {int(x.max())})")


def completion_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask, temperature=1.0,
                        entropy_grad=False):
    """Per-token log-probs and entropies of the completion tokens, in one forward pass.

    prompt_ids/prompt_mask [N, P] (left padded), completion_ids/completion_mask [N, T].
    Returns (logp [N, T], entropy [N, T]); both are 0 where completion_mask is 0.
    Entropy is of the full next-token distribution (nats) at each completion position; it carries
    a gradient only with entropy_grad=True (an entropy bonus in the loss needs one).
    """
    _check_rows(model, prompt_ids, prompt_mask, completion_ids, completion_mask)
    temperature = checks.number("completion_logprobs", "temperature", temperature, lo=0)
    if not isinstance(entropy_grad, bool):
        raise ValueError(f"completion_logprobs: entropy_grad={checks._short(entropy_grad)} must be True or False")
    if decode.supports(model) and not _dropping_out(model):  # each distinct prompt computed once (decode.py)
        logits = decode.completion_logits(model, prompt_ids, prompt_mask, position_ids_from_mask(prompt_mask),
                                          completion_ids).float()  # [N, T, V]
    else:
        ids = torch.cat([prompt_ids, completion_ids], 1)        # [N, P+T]
        mask = torch.cat([prompt_mask, completion_mask], 1)     # [N, P+T]
        out = model(input_ids=ids, attention_mask=mask, position_ids=position_ids_from_mask(mask), use_cache=False)
        P, T = prompt_ids.shape[1], completion_ids.shape[1]
        logits = out.logits[:, P - 1 : P + T - 1, :].float()    # [N, T, V]: position j predicts token j+1
    if temperature not in (0, 1.0):
        logits = logits / temperature
    logp_all = F.log_softmax(logits, -1)                   # [N, T, V]
    logp = logp_all.gather(-1, completion_ids[..., None]).squeeze(-1)  # [N, T]
    with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
        entropy = -(logp_all.exp() * logp_all).sum(-1)      # [N, T]
    m = completion_mask.to(logp.dtype)
    return logp * m, entropy * m

"""The lean decoding loop (utils/models/decode.py) and policy.sample's use of it: the same logits as the
transformers forward pass to rounding, and the same samples where rounding cannot move a draw.

Two implementations, so every comparison here is within a tolerance (tests/tolerance.py): the lean decoder's
matrix products have other shapes than transformers', and which kernel runs them depends on the CPU."""
import pytest
import torch
from tolerance import assert_near, assert_near_norm, assert_same_draws, tolerance

from utils.models import decode, policy
from utils.models.policy import encode_prompts, load_policy, position_ids_from_mask, sample

TRACE_PROMPTS = ["67+22:", "412+504:", "8447+5329:", "5+9:"]
SHORT_PROMPTS = ["12+3=", "7*8=", "100-1=", "5+5="]


@pytest.fixture(scope="module")
def models():
    return {name: load_policy(name) for name in (policy.TRACE, policy.SHIPPED)}


def _hf_only(monkeypatch):
    monkeypatch.setattr(decode, "supports", lambda model: False)


@pytest.mark.parametrize("name,prompts", [(policy.TRACE, TRACE_PROMPTS), (policy.SHIPPED, SHORT_PROMPTS)])
def test_logits_equal_transformers_forward(models, name, prompts):
    model, tok = models[name]
    model.eval()
    ids, mask = encode_prompts(tok, prompts)  # left padded: the prompts differ in length
    assert (mask == 0).any()
    dec = decode.Decoder(model, len(prompts), ids.shape[1] + 12)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        ours = dec.prefill(ids, mask, position_ids_from_mask(mask))
        out = model(input_ids=ids, attention_mask=mask, position_ids=position_ids_from_mask(mask), use_cache=True)
        theirs, past, attn, pos = out.logits[:, -1], out.past_key_values, mask, position_ids_from_mask(mask)
        assert_near(ours, theirs, "the prefill's logits")
        for _ in range(12):
            tok_ = torch.multinomial(theirs.softmax(-1), 1, generator=gen).squeeze(-1)
            ours = dec.step(tok_)
            pos, attn = pos[:, -1:] + 1, torch.cat([attn, torch.ones(len(prompts), 1, dtype=attn.dtype)], 1)
            out = model(input_ids=tok_[:, None], attention_mask=attn, position_ids=pos, past_key_values=past,
                        use_cache=True)
            theirs, past = out.logits[:, -1], out.past_key_values
            assert_near(ours, theirs, "a step's logits")
        with pytest.raises(ValueError, match="full"):
            dec.step(tok_)


def test_keep_drops_rows(models):
    model, tok = models[policy.TRACE]
    ids, mask = encode_prompts(tok, TRACE_PROMPTS)
    full = decode.Decoder(model, 4, ids.shape[1] + 4)
    part = decode.Decoder(model, 4, ids.shape[1] + 4)
    with torch.no_grad():
        pos = position_ids_from_mask(mask)
        full.prefill(ids, mask, pos), part.prefill(ids, mask, pos)
        part.keep(torch.tensor([1, 3]))
        assert part.k[0].shape[0] == 2 and part.key_ok.shape[0] == 2
        nxt = torch.tensor([5, 6, 7, 8])
        assert_near(part.step(nxt[[1, 3]]), full.step(nxt)[[1, 3]], "the kept rows' logits")
    with pytest.raises(ValueError, match="does not fit"):
        decode.Decoder(model, 4, 3).prefill(ids, mask, position_ids_from_mask(mask))


def _top_two_gaps(model, ro):
    """[N, T] the gap between the two largest logits before each token of ro, by transformers' forward pass over
    the prompt and the tokens written so far (the greedy draw's margin: a gap within rounding may go either way)."""
    ids = torch.cat([ro.prompt_ids, ro.completion_ids], 1)
    mask = torch.cat([ro.prompt_mask, ro.completion_mask], 1)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=position_ids_from_mask(mask)).logits
    P, T = ro.prompt_ids.shape[1], ro.completion_ids.shape[1]
    top = logits[:, P - 1:P - 1 + T].topk(2, -1).values  # [N, T, 2]
    return top[..., 0] - top[..., 1], tolerance(logits)


def _same_samples(model, ours, theirs, greedy):
    """The lean sampler's rollout against transformers': the same tokens where rounding cannot move a draw
    (tests/tolerance.py), and on the rows that agree the same masks, texts and log-probs to rounding."""
    gaps, tol = _top_two_gaps(model, theirs) if greedy else (None, 0.0)
    assert ours.completion_ids.shape == theirs.completion_ids.shape
    agree = assert_same_draws(ours.completion_ids, theirs.completion_ids, gaps, 2 * tol)
    assert agree.float().mean() > 0.99, "nearly every row should agree"
    assert torch.equal(ours.completion_mask[agree], theirs.completion_mask[agree])
    assert torch.equal(ours.truncated[agree], theirs.truncated[agree])
    assert [t for t, a in zip(ours.texts, agree) if a] == [t for t, a in zip(theirs.texts, agree) if a]
    assert_near(ours.logprobs[agree], theirs.logprobs[agree], "the sampled tokens' log-probs")


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_short_answers_sample_as_transformers(models, monkeypatch, temperature):
    """Labs 01-05 (at most 8 new tokens) never drop a row: their samples are the transformers path's, draw for
    draw (the same random numbers from the same distributions, to rounding)."""
    model, tok = models[policy.SHIPPED]
    prompts = [f"{a}+{b}=" for a in range(0, 100, 7) for b in range(0, 50, 9)]
    kw = dict(k=4, temperature=temperature, max_new_tokens=8)
    ours = sample(model, tok, prompts, generator=torch.Generator().manual_seed(1), **kw)
    _hf_only(monkeypatch)
    theirs = sample(model, tok, prompts, generator=torch.Generator().manual_seed(1), **kw)
    _same_samples(model, ours, theirs, greedy=temperature == 0)


def test_traces_sample_as_transformers(models, monkeypatch):
    """Trace-length completions drop finished rows; the samples stay those of the transformers path (the
    random numbers drawn are the same; a smaller batch moves a log-prob only by rounding)."""
    model, tok = models[policy.TRACE]
    kw = dict(k=8, temperature=1.0, max_new_tokens=64)
    ours = sample(model, tok, TRACE_PROMPTS * 4, generator=torch.Generator().manual_seed(2), **kw)
    _hf_only(monkeypatch)
    theirs = sample(model, tok, TRACE_PROMPTS * 4, generator=torch.Generator().manual_seed(2), **kw)
    _same_samples(model, ours, theirs, greedy=False)
    lengths = ours.completion_mask.sum(1)
    assert lengths.min() < lengths.max() - 10, "the batch should hold short and long traces (rows were dropped)"


def test_other_architectures_fall_back(models):
    from transformers import LlamaConfig, LlamaForCausalLM

    _, tok = models[policy.SHIPPED]
    torch.manual_seed(0)
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                                         max_position_embeddings=64, pad_token_id=tok.pad_token_id,
                                         eos_token_id=tok.eos_token_id, bos_token_id=tok.eos_token_id))
    assert not decode.supports(llama) and decode.supports(models[policy.SHIPPED][0])
    ro = sample(llama, tok, SHORT_PROMPTS, k=2, max_new_tokens=5, generator=torch.Generator().manual_seed(0))
    assert ro.completion_ids.shape[0] == 8 and ro.completion_ids.shape[1] <= 5
    cfg = models[policy.SHIPPED][0].config
    try:
        cfg.scale_attn_by_inverse_layer_idx = True
        assert not decode.supports(models[policy.SHIPPED][0]), "a GPT-2 variant computed differently falls back"
    finally:
        cfg.scale_attn_by_inverse_layer_idx = False


def _scores(model, args, lean, monkeypatch):
    """completion_logprobs' log-probs, entropies and the gradient of their sum, by the lean grouped forward or
    by transformers' forward pass."""
    with monkeypatch.context() as m:
        if not lean:
            _hf_only(m)
        model.zero_grad()
        lp, ent = policy.completion_logprobs(model, *args, entropy_grad=True)
        (lp.sum() + 0.5 * ent.sum()).backward()
        out = lp.detach(), ent.detach(), [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        return out


def _agree(a, b):
    assert_near(a[0], b[0], "log-probs")
    assert_near(a[1], b[1], "entropies")
    for x, y in zip(a[2], b[2]):
        assert_near_norm(x, y, "a parameter's gradient")


@pytest.mark.parametrize("name,prompts,T", [(policy.SHIPPED, SHORT_PROMPTS, 8), (policy.TRACE, TRACE_PROMPTS, 40)])
def test_grouped_forward_equals_transformers(models, monkeypatch, name, prompts, T):
    """Training's log-probs (each prompt computed once for its group, decode.completion_logits) equal the full
    forward pass's, values and gradients, on groups of left-padded prompts with completions of several lengths."""
    model, tok = models[name]
    model.eval()
    ro = sample(model, tok, prompts, k=4, max_new_tokens=T, generator=torch.Generator().manual_seed(3))
    assert (ro.prompt_mask == 0).any() and (ro.completion_mask == 0).any()  # padding on both sides
    args = (ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask)
    _agree(_scores(model, args, True, monkeypatch), _scores(model, args, False, monkeypatch))
    # the sampler's log-probs are the same distribution's
    assert_near(_scores(model, args, True, monkeypatch)[0], ro.logprobs, "training's log-probs against the sampler's")


def test_grouped_forward_any_row_order(models, monkeypatch):
    """Prompts that repeat but not next to each other, a prompt alone, and one-token completions: still the full
    forward's numbers (rows are grouped only where a prompt equals the row before's)."""
    model, tok = models[policy.SHIPPED]
    model.eval()
    ro = sample(model, tok, SHORT_PROMPTS + SHORT_PROMPTS[:2], k=1, max_new_tokens=6,
                generator=torch.Generator().manual_seed(4))
    args = (ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask)
    _agree(_scores(model, args, True, monkeypatch), _scores(model, args, False, monkeypatch))
    one = (ro.prompt_ids, ro.prompt_mask, ro.completion_ids[:, :1], ro.completion_mask[:, :1])
    _agree(_scores(model, one, True, monkeypatch), _scores(model, one, False, monkeypatch))


def test_grouped_forward_does_half_the_work(models, monkeypatch):
    """A group of 8 completions runs its prompt once: the model's blocks see n_prompts * P + N * (T - 1)
    positions, against N * (P + T) in the full forward."""
    model, tok = models[policy.SHIPPED]
    ro = sample(model, tok, SHORT_PROMPTS, k=8, max_new_tokens=8, generator=torch.Generator().manual_seed(5))
    seen = []
    real = decode._qkv
    monkeypatch.setattr(decode, "_qkv", lambda blk, x, *a: (seen.append(x.shape[0] * x.shape[1]), real(blk, x, *a))[1])
    decode.completion_logits(model, ro.prompt_ids, ro.prompt_mask, position_ids_from_mask(ro.prompt_mask),
                             ro.completion_ids)
    N, P = ro.prompt_ids.shape
    T = ro.completion_ids.shape[1]
    layers = model.config.n_layer
    assert sum(seen) == layers * (4 * P + N * (T - 1))


def test_dropout_in_training_mode_takes_transformers_path(models, monkeypatch):
    """The lean path has no dropout: a model in training mode with dropout on is scored by transformers."""
    model, tok = models[policy.SHIPPED]
    ro = sample(model, tok, SHORT_PROMPTS, k=2, max_new_tokens=4, generator=torch.Generator().manual_seed(6))
    args = (ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask)

    def refuse(*a, **k):
        raise AssertionError("the lean path ran")
    monkeypatch.setattr(decode, "completion_logits", refuse)
    drop = [m for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    assert drop, "GPT-2 has dropout layers"
    saved = [m.p for m in drop]
    try:
        for m in drop:
            m.p = 0.1
        model.train()
        policy.completion_logprobs(model, *args)      # transformers' forward, dropout on
        model.eval()
        with pytest.raises(AssertionError, match="lean path ran"):
            policy.completion_logprobs(model, *args)  # eval mode: the lean path
    finally:
        for m, p in zip(drop, saved):
            m.p = p
        model.eval()

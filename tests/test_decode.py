"""The lean decoding loop (utils/models/decode.py) and policy.sample's use of it: the same logits as the
transformers forward pass, bit for bit, and the same samples."""
import pytest
import torch

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
        assert torch.equal(ours, theirs)
        for _ in range(12):
            tok_ = torch.multinomial(theirs.softmax(-1), 1, generator=gen).squeeze(-1)
            ours = dec.step(tok_)
            pos, attn = pos[:, -1:] + 1, torch.cat([attn, torch.ones(len(prompts), 1, dtype=attn.dtype)], 1)
            out = model(input_ids=tok_[:, None], attention_mask=attn, position_ids=pos, past_key_values=past,
                        use_cache=True)
            theirs, past = out.logits[:, -1], out.past_key_values
            assert torch.equal(ours, theirs)
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
        assert torch.allclose(part.step(nxt[[1, 3]]), full.step(nxt)[[1, 3]], atol=1e-5)
    with pytest.raises(ValueError, match="does not fit"):
        decode.Decoder(model, 4, 3).prefill(ids, mask, position_ids_from_mask(mask))


def _same(a, b):
    return (torch.equal(a.completion_ids, b.completion_ids) and torch.equal(a.completion_mask, b.completion_mask)
            and torch.equal(a.truncated, b.truncated) and a.texts == b.texts)


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_short_answers_sample_exactly_as_transformers(models, monkeypatch, temperature):
    """Labs 01-05 (at most 8 new tokens) never drop a row: their samples are bit for bit the transformers path's."""
    model, tok = models[policy.SHIPPED]
    prompts = [f"{a}+{b}=" for a in range(0, 100, 7) for b in range(0, 50, 9)]
    kw = dict(k=4, temperature=temperature, max_new_tokens=8)
    ours = sample(model, tok, prompts, generator=torch.Generator().manual_seed(1), **kw)
    _hf_only(monkeypatch)
    theirs = sample(model, tok, prompts, generator=torch.Generator().manual_seed(1), **kw)
    assert _same(ours, theirs) and torch.equal(ours.logprobs, theirs.logprobs)


def test_traces_sample_as_transformers(models, monkeypatch):
    """Trace-length completions drop finished rows; the samples stay those of the transformers path (the
    random numbers drawn are the same; a smaller batch may move a log-prob in its last bits)."""
    model, tok = models[policy.TRACE]
    kw = dict(k=8, temperature=1.0, max_new_tokens=64)
    ours = sample(model, tok, TRACE_PROMPTS * 4, generator=torch.Generator().manual_seed(2), **kw)
    _hf_only(monkeypatch)
    theirs = sample(model, tok, TRACE_PROMPTS * 4, generator=torch.Generator().manual_seed(2), **kw)
    assert _same(ours, theirs)
    assert torch.allclose(ours.logprobs, theirs.logprobs, atol=1e-5)
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

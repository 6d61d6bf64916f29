"""utils.models.policy: tokenizer, position ids, batched sampling, completion log-probs, loading."""
import math

import pytest
import torch
from tolerance import assert_near
from transformers import AutoModelForCausalLM, AutoTokenizer

import utils
from utils.models.policy import (
    SHIPPED,
    char_tokenizer,
    completion_logprobs,
    encode_prompts,
    load_policy,
    position_ids_from_mask,
    sample,
)

# prompts of different lengths, so left padding is exercised (4, 6 and 7 characters)
PROMPTS = ["1+2=", "37+29=", "512-48="]


# ---------------------------------------------------------------- tokenizer
def test_char_tokenizer_ids_by_hand():
    tok = char_tokenizer()
    # vocab: <pad>=0 <eos>=1 <unk>=2, then "0123456789+-*= " from 3:
    # '0'=3 ... '9'=12, '+'=13, '-'=14, '*'=15, '='=16, ' '=17
    assert (tok.pad_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2)
    assert len(tok) == 18
    assert tok("12+3=", add_special_tokens=False)["input_ids"] == [4, 5, 13, 6, 16]
    assert tok("9-0*", add_special_tokens=False)["input_ids"] == [12, 14, 3, 15]
    assert tok("x", add_special_tokens=False)["input_ids"] == [2]  # unknown character
    assert tok.padding_side == "left"


@pytest.mark.parametrize("text", ["37+29=66", "512-48=464", "3-15=-12", "1 2", "0"])
def test_char_tokenizer_round_trip(text):
    tok = char_tokenizer()
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text)  # one token per character
    assert tok.decode(ids) == text
    assert tok.decode(ids + [tok.eos_token_id], skip_special_tokens=True) == text


def test_char_tokenizer_save_load(tmp_path):
    tok = char_tokenizer()
    tok.save_pretrained(tmp_path)
    tok2 = AutoTokenizer.from_pretrained(tmp_path)
    for text in ["37+29=", "3-15=-12"]:
        assert tok2(text, add_special_tokens=False)["input_ids"] == tok(text, add_special_tokens=False)["input_ids"]
        assert tok2.decode(tok2(text, add_special_tokens=False)["input_ids"]) == text
    assert (tok2.pad_token, tok2.eos_token, tok2.unk_token) == ("<pad>", "<eos>", "<unk>")
    assert tok2.padding_side == "left"


def test_encode_prompts_left_pads():
    tok = char_tokenizer()
    ids, mask = encode_prompts(tok, ["1+2=", "37+29="])
    # "1+2=" is 4 tokens, "37+29=" 6: the first row gets 2 pads on the LEFT
    assert ids.tolist() == [[0, 0, 4, 13, 5, 16], [6, 10, 13, 5, 12, 16]]
    assert mask.tolist() == [[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]]


# ---------------------------------------------------------------- position ids
def test_position_ids_hand_example():
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    assert position_ids_from_mask(mask).tolist() == [[0, 0, 0, 1], [0, 1, 2, 3]]


def test_position_ids_with_completion_padding():
    # left pad, 2 prompt tokens, 1 completion token, then padding after EOS: positions hold
    mask = torch.tensor([[0, 1, 1, 1, 0, 0]])
    assert position_ids_from_mask(mask).tolist() == [[0, 0, 1, 2, 2, 2]]
    assert position_ids_from_mask(mask.bool()).dtype == torch.long


# ---------------------------------------------------------------- sampling
def test_sample_shapes_and_masks(shipped):
    model, tok = shipped
    k = 3
    g = torch.Generator().manual_seed(0)
    r = sample(model, tok, PROMPTS, k=k, generator=g)
    N = len(PROMPTS) * k
    P = 7  # the longest prompt, "512-48=", is 7 tokens
    assert r.prompt_ids.shape == r.prompt_mask.shape == (N, P)
    T = r.completion_ids.shape[1]
    assert 1 <= T <= 8
    assert r.completion_mask.shape == r.logprobs.shape == (N, T)
    assert len(r.texts) == N
    # groups are contiguous: row i is a completion of prompt i // k
    for i in range(N):
        assert tok.decode(r.prompt_ids[i][r.prompt_mask[i].bool()]) == PROMPTS[i // k]
    # the first prompt "1+2=" has 3 left pads
    assert r.prompt_mask[0].tolist() == [0, 0, 0, 1, 1, 1, 1]
    eos = tok.eos_token_id
    for i in range(N):
        ids, m = r.completion_ids[i].tolist(), r.completion_mask[i].tolist()
        n = sum(m)
        assert m == [1] * n + [0] * (T - n)             # mask is a prefix
        if eos in ids[:n]:
            assert ids.index(eos) == n - 1              # ...that ends exactly at (and includes) EOS
        else:
            assert n == 8                               # no EOS only if it ran out of tokens
        assert all(t == tok.pad_token_id for t in ids[n:])
        assert "<eos>" not in r.texts[i] and "<pad>" not in r.texts[i]
        body = [t for t in ids[:n] if t != eos]
        assert r.texts[i] == tok.decode(body)           # text = the completion tokens without EOS
        assert (r.logprobs[i, n:] == 0).all() and (r.logprobs[i, :n] <= 0).all()


def test_sample_truncated_rows_have_full_mask(shipped):
    model, tok = shipped
    # "512-48=" needs 3 digits + EOS = 4 tokens; with 2 new tokens no row can reach EOS
    r = sample(model, tok, ["512-48="], k=4, max_new_tokens=2, generator=torch.Generator().manual_seed(0))
    assert r.completion_ids.shape == (4, 2)
    assert r.completion_mask.tolist() == [[1, 1]] * 4
    assert all(len(t) == 2 for t in r.texts)


def test_sample_same_seed_same_texts(shipped):
    model, tok = shipped
    a = sample(model, tok, PROMPTS, k=8, generator=torch.Generator().manual_seed(123))
    b = sample(model, tok, PROMPTS, k=8, generator=torch.Generator().manual_seed(123))
    c = sample(model, tok, PROMPTS, k=8, generator=torch.Generator().manual_seed(124))
    assert a.texts == b.texts
    assert torch.equal(a.completion_ids, b.completion_ids)
    assert torch.equal(a.logprobs, b.logprobs)
    assert a.texts != c.texts


def test_sample_greedy(shipped):
    model, tok = shipped
    r = sample(model, tok, PROMPTS, k=3, temperature=0)
    for i in range(len(PROMPTS)):
        assert len(set(r.texts[3 * i:3 * i + 3])) == 1  # greedy: all k samples agree


def test_sample_restores_train_mode(shipped):
    model, tok = shipped
    model.train()
    try:
        sample(model, tok, ["1+2="], k=1)
        assert model.training
    finally:
        model.eval()


def test_sample_bad_arguments(shipped):
    model, tok = shipped
    with pytest.raises(ValueError, match="k=0 must be an integer >= 1"):
        sample(model, tok, ["1+2="], k=0)
    with pytest.raises(ValueError, match="temperature"):
        sample(model, tok, ["1+2="], temperature=-1)


# ---------------------------------------------------------------- log-probs
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_rollout_logprobs_equal_forward_pass(shipped, temperature):
    """The key contract: the log-probs recorded while sampling (KV cache, one token at a time)
    equal those of one full training forward pass, for left-padded prompts of different lengths."""
    model, tok = shipped
    r = sample(model, tok, PROMPTS, k=4, temperature=temperature, generator=torch.Generator().manual_seed(0))
    lp, ent = completion_logprobs(model, r.prompt_ids, r.prompt_mask, r.completion_ids, r.completion_mask,
                                  temperature)
    assert lp.shape == ent.shape == r.logprobs.shape
    assert_near(lp, r.logprobs, "the training forward's log-probs against the sampler's")  # two implementations
    m = r.completion_mask.bool()
    assert (lp[~m] == 0).all() and (ent[~m] == 0).all()
    # entropy of a distribution over V tokens lies in [0, log V]
    assert (ent >= -1e-6).all() and (ent <= math.log(len(tok)) + 1e-5).all()


def test_completion_logprobs_same_alone_and_in_padded_batch(shipped):
    model, tok = shipped
    r = sample(model, tok, PROMPTS, k=1, temperature=0)
    lp_batch, ent_batch = completion_logprobs(model, r.prompt_ids, r.prompt_mask, r.completion_ids,
                                              r.completion_mask)
    for i, p in enumerate(PROMPTS):
        ids, mask = encode_prompts(tok, [p])   # no padding at all
        n = int(r.completion_mask[i].sum())
        c_ids, c_mask = r.completion_ids[i:i + 1, :n], r.completion_mask[i:i + 1, :n]
        lp_alone, ent_alone = completion_logprobs(model, ids, mask, c_ids, c_mask)
        # another batch is another shape of matrix product: the same numbers to rounding
        assert_near(lp_alone[0], lp_batch[i, :n], f"row {i}'s log-probs alone and in the batch")
        assert_near(ent_alone[0], ent_batch[i, :n], f"row {i}'s entropies alone and in the batch")


def test_completion_logprobs_hand_check(shipped):
    """log p(token) from completion_logprobs equals log_softmax of the logits of an unpadded
    forward pass at the position before the token (prompt "37+29=", completion "66<eos>")."""
    model, tok = shipped
    ids = torch.tensor([tok("37+29=", add_special_tokens=False)["input_ids"]])
    comp = torch.tensor([tok("66", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]])
    lp, _ = completion_logprobs(model, ids, torch.ones_like(ids), comp, torch.ones_like(comp))
    with torch.no_grad():
        logits = model(torch.cat([ids, comp], 1)).logits[0]       # [9, V]
    full = torch.log_softmax(logits, -1)
    # token j of the completion sits at position 6 + j; it is predicted at position 5 + j
    want = torch.stack([full[5 + j, comp[0, j]] for j in range(3)])
    assert_near(lp[0], want, "completion_logprobs against the plain forward's")  # with a mask and without: rounding


def test_left_padding_needs_position_ids(shipped):
    """Control for the tests above: without position ids from the mask, a left-padded row's logits
    differ from the unpadded ones, so the equality tests do check the position-id handling."""
    model, tok = shipped
    ids, mask = encode_prompts(tok, ["1+2=", "512-48="])
    alone_ids, alone_mask = encode_prompts(tok, ["1+2="])
    with torch.no_grad():
        alone = model(input_ids=alone_ids, attention_mask=alone_mask).logits[0, -1]
        right = model(input_ids=ids, attention_mask=mask, position_ids=position_ids_from_mask(mask)).logits[0, -1]
        naive = model(input_ids=ids, attention_mask=mask).logits[0, -1]
    assert_near(right, alone, "a left-padded row's logits against the row alone")
    if torch.allclose(naive, alone, atol=1e-3):
        pytest.skip("this transformers version derives position ids from the mask itself")
    assert (naive - alone).abs().max() > 1e-2


# ---------------------------------------------------------------- loading
def test_load_policy_unknown_name_offline():
    with pytest.raises(OSError) as e:
        load_policy("surely-not-a-model/xyz")
    assert SHIPPED in str(e.value) and "rlvr-base" in str(e.value)
    assert "surely-not-a-model/xyz" in str(e.value)


def test_load_policy_is_the_standard_hf_model(shipped):
    model, tok = shipped
    m2 = AutoModelForCausalLM.from_pretrained(utils.BASE_MODEL_DIR).eval()
    t2 = AutoTokenizer.from_pretrained(utils.BASE_MODEL_DIR)
    assert tok.padding_side == "left" and tok.pad_token is not None
    assert t2("37+29=")["input_ids"] == tok("37+29=")["input_ids"]
    sd1, sd2 = model.state_dict(), m2.state_dict()
    assert sd1.keys() == sd2.keys() and all(torch.equal(sd1[k], sd2[k]) for k in sd1)
    ids = torch.tensor([tok("37+29=", add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, m2(ids).logits)


def test_load_policy_local_path_and_missing_pad(shipped, tmp_path):
    # a local folder works too; a tokenizer without a pad token (like the hub's gpt2) gets eos as pad
    model, _ = shipped
    tok = char_tokenizer()
    tok.pad_token = None
    tok.padding_side = "right"
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    assert AutoTokenizer.from_pretrained(tmp_path).pad_token is None
    m2, t2 = load_policy(str(tmp_path))
    assert t2.padding_side == "left"
    assert t2.pad_token_id == t2.eos_token_id == 1
    ids, mask = encode_prompts(t2, ["1+2=", "37+29="])
    assert ids[0, :2].tolist() == [1, 1] and mask[0].tolist() == [0, 0, 1, 1, 1, 1]
    # sampling and log-probs do not depend on which id pads (pad == eos here, as with gpt2)
    shipped_tok = shipped[1]
    a = sample(model, shipped_tok, PROMPTS, k=4, generator=torch.Generator().manual_seed(5))
    b = sample(m2, t2, PROMPTS, k=4, generator=torch.Generator().manual_seed(5))
    assert a.texts == b.texts
    assert_near(a.logprobs, b.logprobs, "the log-probs with another pad id")
    lp, _ = completion_logprobs(m2, b.prompt_ids, b.prompt_mask, b.completion_ids, b.completion_mask)
    assert_near(lp, b.logprobs, "the training forward's log-probs against the sampler's")


def test_load_policy_names_the_rebuild_command_when_a_shipped_model_is_missing(tmp_path, monkeypatch):
    import utils.models.policy as pol
    monkeypatch.setattr(pol, "BASE_MODEL_DIR", str(tmp_path / "none"))
    monkeypatch.setattr(pol, "TRACE_MODEL_DIR", str(tmp_path / "none"))
    with pytest.raises(FileNotFoundError, match=r"'rlvr-base' is missing .*build_base_model`"):
        pol.load_policy(pol.SHIPPED)
    with pytest.raises(FileNotFoundError, match=r"'rlvr-trace' is missing .*build_base_model task=scratchpad`"):
        pol.load_policy(pol.TRACE)

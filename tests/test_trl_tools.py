"""The calculator episode through TRL's multi-turn path (GRPOTrainer(environment_factory=...), Lab 09): scripted
episodes on which TRL and our loop agree on the tokens, on which carry loss and on the reward, and differ, as the
knob map says, where an episode is cut by the cap.

TRL runs tools from a chat model's tool calls: the tokenizer needs a chat template that renders them and a response
template that parses them. Ours is character-level with neither, so the test gives it a small template that writes
a call exactly as our calculator protocol does ('?478+356='). Generation is scripted (the policy's tokens are
given), so the test checks TRL's bookkeeping, not a model. A character tokenizer cannot show re-tokenising, so
the right episode runs again with a small BPE (utils.tasks.tools.bpe_tokenizer) whose merge ' >' crosses the
calculator's space and the policy's '>': TRL keeps the ids as written. It runs at the lock's TRL and at the lowest
allowed (requirements.txt: trl 1.10 and transformers 5.13, the first that parse tool calls with a response template and
need no jmespath); the skip below is for an environment outside those ranges."""
import pytest
import transformers
from packaging.version import Version

from utils.rl.trl_tools import our_segments, scripted_episodes, tool_tokenizer
from utils.tasks.tools import Calculator, calculate, episode_tensors, retokenised
from utils.verifiers.tools import tool_echo_reward
from utils.verifiers.traces import outcome_reward

pytestmark = pytest.mark.skipif(Version(transformers.__version__) < Version("5.13"),
                                reason="TRL's environment_factory with a response template needs transformers >= 5.13")

EPISODES = {
    "478+356:": ("834", {"478+356:": "?478+356=", "478+356:?478+356=834 ": ">834"}),
    "12+3:": ("15", {"12+3:": "?12+4=", "12+3:?12+4=16 ": ">16"}),                 # miscopies an operand
    "5+5:": ("10", {"5+5:": "?5+5=", "5+5:?5+5=10 ": "?5+5=", "5+5:?5+5=10 ?5+5=10 ": "?5+5="}),  # a runaway
}


@pytest.fixture(scope="module")
def trl_run():
    """(tokenizer, {prompt: TRL's output dict and rewards}) for three scripted episodes: a right one, one whose call
    miscopies an operand (its echo is paid, its truth is not), and one that calls past the cap of two."""
    return scripted_episodes(EPISODES, max_calls=2)


@pytest.mark.parametrize("prompt, call, answer", [("478+356:", "?478+356=", "834"), ("12+3:", "?12+4=", "15")])
def test_trl_and_our_loop_agree_on_an_episode(trl_run, prompt, call, answer):
    tok, out = trl_run
    res, trl_rewards = out[prompt]
    enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    env = Calculator(tok, n_rows=1)                                  # ours answers the same call
    reply = env(0, enc(call))
    text = call + tok.decode(reply) + ">" + calculate(call[1:-1])
    written = enc(">" + calculate(call[1:-1])) + [tok.eos_token_id]
    segments = [("policy", enc(call)), ("env", reply), ("policy", written)]
    T = res["completion_ids"].shape[1]
    ids, completion_mask, loss_mask = episode_tensors(segments, T, tok)
    for i in range(2):
        n = int(res["completion_mask"][i].sum())
        assert res["completion_ids"][i, :n].tolist() == ids[:n].tolist(), "the same tokens, never re-tokenised"
        assert n == int(completion_mask.sum())
        trl_loss = (res["completion_mask"][i] * res["tool_mask"][i])[:n]
        assert trl_loss.tolist() == loss_mask[:n].tolist(), "the calculator's tokens carry no loss in either"
    ours = outcome_reward([text], [answer])[0]
    assert trl_rewards == [ours, ours] == ([1.0, 1.0] if prompt == "478+356:" else [0.0, 0.0])
    assert tool_echo_reward([text]) == [1.0]                           # the echo check pays both: it reads the text


def test_the_cap_cuts_both_but_differently(trl_run):
    """A runaway episode (a third call with a cap of two): both stop answering after two calls, and the policy's
    tokens carry the loss in both. They differ in how the episode ends and what it is paid, as the knob map says:
    TRL ends at the unanswered call with no EOS (a truncated completion), ours appends the calculator's EOS (an
    environment token, no loss) and marks the row cut; TRL's environment-owned reward reads the environment's
    state (the sum was done: 1), our outcome check reads the text (no answer written: 0)."""
    tok, out = trl_run
    res, trl_rewards = out["5+5:"]
    enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    env = Calculator(tok, n_rows=1, max_calls=2)
    segments = []
    for _ in range(3):
        segments.append(("policy", enc("?5+5=")))
        segments.append(("env", env(0, [t for _, seg in segments for t in seg])))
    assert segments[-1] == ("env", [tok.eos_token_id]) and env.stats()["tool_cut_frac"] == 1.0
    ids, completion_mask, loss_mask = episode_tensors(segments, 32, tok)
    n_ours = int(completion_mask.sum())
    for i in range(2):
        n = int(res["completion_mask"][i].sum())
        assert n == n_ours - 1, "TRL's episode is ours without the closing EOS"
        assert res["completion_ids"][i, :n].tolist() == ids[:n].tolist()
        assert tok.decode(res["completion_ids"][i, :n]) == "?5+5=10 ?5+5=10 ?5+5="
        assert (res["completion_mask"][i] * res["tool_mask"][i])[:n].tolist() == loss_mask[:n].tolist()
    assert loss_mask[n_ours - 1] == 0 and ids[n_ours - 1] == tok.eos_token_id
    assert trl_rewards == [1.0, 1.0]
    assert outcome_reward([tok.decode(ids[:n_ours], skip_special_tokens=True)], ["10"]) == [0.0]


def test_our_segments_by_hand(trl_run):
    """our_segments, the notebook's side of the comparison: the turns and the calculator's replies in order, a
    cut's EOS as the environment's, and a script with a missing turn refused by name."""
    tok, _ = trl_run
    enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    eos = tok.eos_token_id
    assert our_segments(tok, "478+356:", EPISODES["478+356:"][1]) == [
        ("policy", enc("?478+356=")), ("env", enc("834 ")), ("policy", enc(">834") + [eos])]
    call, reply = ("policy", enc("?5+5=")), ("env", enc("10 "))
    assert our_segments(tok, "5+5:", EPISODES["5+5:"][1]) == [call, reply, call, reply, call, ("env", [eos])]
    assert our_segments(tok, "5+5:", EPISODES["5+5:"][1], max_calls=0) == [call, ("env", [eos])]
    with pytest.raises(ValueError, match="script has no turn after '12\\+3:\\?12\\+4=16 '"):
        our_segments(tok, "12+3:", {"12+3:": "?12+4="})


# the BPE of bpe_tokenizer's default merges; its vocabulary: <eos> 0 (also the padding, as GPT-2's), then ALPHABET in
# order ('0'-'9' 1-10, '+' 11, '=' 12, '>' 13, ':' 14, ' ' 15, '-' 16, '?' 17, '!' 18), then the merges ' >' 19, '34' 20
MERGES = ((" ", ">"), ("3", "4"))
BPE_EPISODES = {"478+356:": EPISODES["478+356:"]}
# the policy's call, the calculator's reply, the policy's answer:
#            ?  4  7  8  +  3  5  6  =  | 8  34 ' ' | >  8  34 <eos>
WRITTEN = [17, 5, 8, 9, 11, 4, 6, 7, 12, 9, 20, 15, 13, 9, 20, 0]
LOSS = [1] * 9 + [0] * 3 + [1] * 4
REENCODED = [17, 5, 8, 9, 11, 4, 6, 7, 12, 9, 20, 19, 9, 20, 0]   # the text encoded again: ' ' and '>' merge into ' >'


@pytest.fixture(scope="module")
def trl_bpe_run():
    """The right episode through TRL with the BPE tokenizer."""
    return scripted_episodes(BPE_EPISODES, max_calls=2, merges=MERGES)


def test_trl_keeps_a_bpe_episodes_ids_as_written(trl_bpe_run):
    """With a BPE whose merge ' >' crosses the calculator's trailing space and the policy's '>', TRL's row is the ids as
    they were written (the call, the reply as TRL encoded it, the answer's turn), the calculator's three tokens out of
    the loss: TRL appends the tool's reply as ids and never decodes and re-encodes the episode. Re-encoding its text
    would give 15 tokens, not 16, with the merged ' >' that neither wrote; ours builds the same row as TRL."""
    tok, out = trl_bpe_run
    vocab = tok.get_vocab()
    assert (vocab["<eos>"], vocab["?"], vocab["="], vocab[" "], vocab[">"], vocab[" >"], vocab["34"]) == \
        (0, 17, 12, 15, 13, 19, 20) and tok.pad_token_id == tok.eos_token_id == 0
    res, rewards = out["478+356:"]
    for i in range(2):
        n = int(res["completion_mask"][i].sum())
        assert res["completion_ids"][i, :n].tolist() == WRITTEN, "TRL keeps the ids as written"
        assert (res["completion_mask"][i] * res["tool_mask"][i])[:n].tolist() == LOSS
        assert vocab[" >"] not in res["completion_ids"][i].tolist()
    assert rewards == [1.0, 1.0]
    segments = our_segments(tok, "478+356:", BPE_EPISODES["478+356:"][1])
    ids, completion_mask, loss_mask = episode_tensors(segments, len(WRITTEN), tok)
    assert ids.tolist() == WRITTEN and loss_mask.tolist() == LOSS and completion_mask.tolist() == [1] * len(WRITTEN)
    r = retokenised(tok, segments)
    assert (r["written"], r["reencoded"], r["first_difference"], r["mislabelled"]) == (WRITTEN, REENCODED, 11, 1)
    assert tok.decode(WRITTEN) == tok.decode(REENCODED) == "?478+356=834 >834<eos>"


def test_trl_refuses_a_merge_across_the_call_and_the_reply():
    """TRL takes the tool reply's ids from a dummy conversation rendered without and with the reply ('?=' and
    '?=834 '), keeping what follows the first one's ids. With a merge of the call's '=' and the reply's first digit
    ('=8'), the first one's ids are no prefix of the second one's, and TRL raises rather than guess which token is
    whose; where the reply starts with another digit the same tokenizer runs, its ids as written. Ours answers the
    call token by token (the policy's '=' as sampled, then the reply's ids), so it has no such case."""
    merges = (("=", "8"),)
    with pytest.raises(ValueError, match="Unexpected tokenization: the EOS-trimmed prefix IDs are not a prefix"):
        scripted_episodes(BPE_EPISODES, merges=merges)
    script = {"12+3:": "?12+3=", "12+3:?12+3=15 ": ">15"}
    tok, out = scripted_episodes({"12+3:": ("15", script)}, merges=merges)
    assert tok.get_vocab()["=8"] == 19
    res, rewards = out["12+3:"]
    #       ?  1  2  +  3  =  | 1  5  ' ' | >  1  5  <eos>
    want = [17, 2, 3, 11, 4, 12, 2, 6, 15, 13, 2, 6, 0]
    assert res["completion_ids"][0, :len(want)].tolist() == want and rewards == [1.0, 1.0]
    assert (res["completion_mask"][0] * res["tool_mask"][0])[:len(want)].tolist() == [1] * 6 + [0] * 3 + [1] * 4
    segments = our_segments(tool_tokenizer(merges=merges), "478+356:", BPE_EPISODES["478+356:"][1])
    assert [(who, len(ids)) for who, ids in segments] == [("policy", 9), ("env", 4), ("policy", 5)]

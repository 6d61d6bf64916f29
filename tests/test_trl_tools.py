"""The calculator episode through TRL's multi-turn path (GRPOTrainer(environment_factory=...), Lab 09): scripted
episodes on which TRL and our loop agree on the tokens, on which carry loss and on the reward, and differ, as the
knob map says, where an episode is cut by the cap.

TRL runs tools from a chat model's tool calls: the tokenizer needs a chat template that renders them and a response
template that parses them. Ours is character-level with neither, so the test gives it a small template that writes
a call exactly as our calculator protocol does ('?478+356='). Generation is scripted (the policy's tokens are
given), so the test checks TRL's bookkeeping, not a model. It runs at the lock's TRL and at the lowest allowed
(requirements.txt: trl 1.10 and transformers 5.13, the first that parse tool calls with a response template and
need no jmespath); the skip below is for an environment outside those ranges."""
import pytest
import transformers
from packaging.version import Version

from utils.rl.trl_tools import our_segments, scripted_episodes
from utils.tasks.tools import Calculator, calculate, episode_tensors
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
    ids, completion_mask, loss_mask = episode_tensors(segments, T, tok.pad_token_id)
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
    ids, completion_mask, loss_mask = episode_tensors(segments, 32, tok.pad_token_id)
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

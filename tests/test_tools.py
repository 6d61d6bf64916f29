"""A tool in the middle of a completion (Lab 09's seam): the calculator worked by hand, sample(env=...) placing the
environment's tokens in the completion and out of the loss, and ToolRollout in a training run."""
import copy

import pytest
import torch

from utils.models.policy import char_tokenizer, sample
from utils.rl.grpo import GRPOConfig
from utils.rl.loop import train_grpo
from utils.rl.rollout import ToolRollout
from utils.runs.build_base_model import make_model
from utils.tasks.tools import ALPHABET, ERROR, Calculator, calculate


@pytest.fixture(scope="module")
def tiny():
    """A small random GPT-2 on the tool alphabet (what it writes is noise; the tests script the environment)."""
    tok = char_tokenizer(ALPHABET, max_length=64)
    torch.manual_seed(0)
    return make_model("gpt2", dict(n_layer=1, n_embd=32, n_head=2), tok, 64).eval(), tok


def ids(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


@pytest.mark.parametrize("expr, want", [("478+356", "834"), ("3-5", "-2"), ("0+0", "0"), ("4x8", ERROR),
                                        ("", ERROR), ("1 +2", ERROR), ("1" * 13 + "+1", ERROR), (None, ERROR),
                                        ("+5", ERROR), ("12+34+5", ERROR)])
def test_calculate_by_hand(expr, want):
    assert calculate(expr) == want


def test_the_calculator_answers_calls_and_only_calls(tiny):
    _, tok = tiny
    env = Calculator(tok, n_rows=3, max_calls=2)
    assert tok.decode(env(0, ids(tok, "?12+34="))) == "46 "              # a call: the answer and a space
    assert env(1, ids(tok, "8+6+0=")) == []                               # a trace's step: no call open
    assert env(0, ids(tok, "?12+34=46 8+1+0=")) == []                     # the call was answered: closed
    assert env(0, ids(tok, "?12+34")) == []                               # not at '=' yet
    assert tok.decode(env(2, ids(tok, "?4x8="))) == ERROR + " "           # garbage: an error the policy reads
    assert env.calls == [1, 0, 1] and env.errors == [0, 0, 1]
    assert tok.decode(env(0, ids(tok, "?12+34=46 ?1-2="))) == "-1 "       # a second call
    assert env(0, ids(tok, "?12+34=46 ?1-2=-1 ?9+9=")) == [tok.eos_token_id] and env.cut == [True, False, False]
    assert env.stats() == {"tool_calls": 1.0, "tool_error_frac": 1 / 3, "tool_cut_frac": 1 / 3}


def test_the_calculator_refuses_a_tokenizer_without_its_tokens_and_bad_settings(tiny):
    _, tok = tiny
    with pytest.raises(ValueError, match=r"no token for \['\?', '!'\].*tools.ALPHABET"):
        Calculator(char_tokenizer("0123456789+=>: "), n_rows=1)
    with pytest.raises(ValueError, match="max_calls"):
        Calculator(tok, n_rows=1, max_calls=-1)


class Scripted:
    """An environment that answers the policy's first token with `reply` (token ids), once per row."""

    def __init__(self, reply):
        self.reply, self.seen = reply, set()

    def __call__(self, row, written):
        if row in self.seen:
            return []
        self.seen.add(row)
        return self.reply


def test_environment_tokens_are_read_not_trained_on(tiny):
    model, tok = tiny
    reply = ids(tok, "99 ")
    ro = sample(model, tok, ["12+34:", "5+6:"], k=2, max_new_tokens=8, generator=torch.Generator().manual_seed(0),
                env=Scripted(reply))
    answered = 0
    for i in range(4):
        n = int(ro.completion_mask[i].sum())
        if n <= 1:   # the policy wrote EOS first: nothing to answer
            continue
        answered += 1
        assert ro.completion_ids[i, 1:4].tolist() == reply                # token in, token out: the env's ids
        assert ro.loss_mask[i, :4].tolist() == [1, 0, 0, 0]               # the policy's token only
        assert ro.logprobs[i, 1:4].tolist() == [0.0, 0.0, 0.0] and ro.logprobs[i, 0] < 0
        assert ro.completion_mask[i, :4].tolist() == [1, 1, 1, 1]         # the model reads them
        assert "99 " in ro.texts[i]
    assert answered >= 2 and torch.equal(ro.loss_mask * (1 - ro.completion_mask), torch.zeros_like(ro.loss_mask))


def test_an_environment_that_never_answers_changes_nothing(tiny):
    model, tok = tiny
    run = lambda env: sample(model, tok, ["12+34:", "5+6:"], k=3, max_new_tokens=10,  # noqa: E731
                             generator=torch.Generator().manual_seed(3), env=env)
    a, b = run(None), run(lambda row, written: [])
    assert torch.equal(a.completion_ids, b.completion_ids) and torch.equal(a.logprobs, b.logprobs)
    assert a.loss_mask is None and torch.equal(b.loss_mask, b.completion_mask)


def test_an_environment_can_end_an_episode_and_bad_replies_fail_by_name(tiny):
    model, tok = tiny
    ro = sample(model, tok, ["12+34:"], k=4, max_new_tokens=10, generator=torch.Generator().manual_seed(1),
                env=Scripted([tok.eos_token_id]))
    assert all(int(n) <= 2 for n in ro.completion_mask.sum(1)) and not ro.truncated.any()
    for bad in ("46", [1.5], [10**6], None):
        with pytest.raises(ValueError, match="env must return a list of token ids"):
            sample(model, tok, ["12+34:"], k=2, max_new_tokens=4, env=lambda row, written, bad=bad: bad or "x")
    with pytest.raises(ValueError, match="env must be None or a callable"):
        sample(model, tok, ["12+34:"], env="calculator")


def test_tool_rollout_trains_and_records_the_tool_numbers(tiny):
    model, tok = tiny
    prompts, answers = ["12+34:", "5+6:"], ["46", "11"]
    cfg = GRPOConfig(steps=2, batch_size=8, group_size=4, max_new_tokens=12, lr=1e-3, eval_every=0, track_kl=False)
    reward = lambda completions, answer, **kw: [float(i % 2) for i in range(len(completions))]  # noqa: E731
    policy = copy.deepcopy(model)
    hist = train_grpo(policy, tok, prompts, answers, reward, cfg, rollout=ToolRollout(max_calls=1), progress=False)
    assert all({"tool_calls", "tool_error_frac", "tool_cut_frac"} <= set(r) for r in hist)
    assert all(0 <= r["tool_cut_frac"] <= 1 and r["tool_calls"] <= 1 for r in hist)
    with pytest.raises(ValueError, match="max_calls"):
        train_grpo(policy, tok, prompts, answers, reward, cfg, rollout=ToolRollout(max_calls=-2), progress=False)


# ---------------------------------------------------------------- pre-training the tool model

def test_tool_episodes_by_kind():
    import random

    from utils.tasks.tools import tool_episode
    rng = random.Random(0)
    kind, text, loss = tool_episode(rng, 478, 356, noise={"right": 1.0})
    assert (kind, text) == ("right", "?478+356=834 >834")
    assert loss == [1] * 9 + [0] * 4 + [1] * 4              # the calculator's "834 " carries no loss
    for _ in range(50):
        kind, text, loss = tool_episode(rng, 478, 356, noise={"operand": 1.0})
        call, rest = text.split("=", 1)
        x, y = call[1:].split("+")
        assert (x, y) != ("478", "356") and rest == f"{int(x) + int(y)} >{int(x) + int(y)}"
        kind, text, loss = tool_episode(rng, 478, 356, noise={"answer": 1.0})
        assert text.startswith("?478+356=834 >") and text != "?478+356=834 >834" and len(loss) == len(text)


def test_pretrain_batch_keeps_the_tools_answers_out_of_the_loss(tiny):
    from utils.models.sft import pretrain_batch
    _, tok = tiny
    ids, labels, mask = pretrain_batch(tok, [("12+34:", "?12+34=46 >46", [1] * 7 + [0] * 3 + [1] * 3),
                                             ("5+6:", ">11")])
    row = labels[0].tolist()
    assert row[:6] == [-100] * 6                              # the prompt
    assert row[6:13] == ids[0, 6:13].tolist()                 # the call
    assert row[13:16] == [-100] * 3                           # "46 ": the calculator's
    assert row[16:20] == ids[0, 16:20].tolist() and ids[0, 19] == tok.eos_token_id   # ">46" and EOS
    assert labels[1].tolist()[4:8] == ids[1, 4:8].tolist() and mask[1].sum() == 8     # no loss given: all of it
    with pytest.raises(ValueError, match="one 0/1 per token"):
        pretrain_batch(tok, [("1+1:", ">2", [1])])


def test_evaluate_with_the_calculator(tiny):
    """evaluate(env_fn=...) runs each batch with a fresh environment: a scripted policy is not needed to see the
    environment's tokens reach the verifier."""
    from utils.eval.metrics import evaluate
    model, tok = tiny
    seen = []

    def judge(completions, answer, **kw):
        seen.extend(completions)
        return [0.0] * len(completions)
    evaluate(model, tok, ["12+34:"] * 3, ["46"] * 3, k=2, max_new_tokens=6, reward_fn=judge,
             env_fn=lambda n: Scripted(ids(tok, "77 ")))
    assert len(seen) == 6 and sum("77 " in t for t in seen) >= 3
    with pytest.raises(ValueError, match="env_fn must be a function"):
        evaluate(model, tok, ["12+34:"], ["46"], env_fn="calculator")


def test_practice_operands_stay_off_the_held_out_prompts_and_in_range():
    import random

    from utils.tasks.tools import practice_operands
    rng = random.Random(0)
    pairs = [practice_operands(rng, frozenset()) for _ in range(2000)]
    longest = [max(len(str(a)), len(str(b))) for a, b in pairs]
    assert set(longest) == {2, 3, 4, 5} and all(min(len(str(a)), len(str(b))) >= 1 for a, b in pairs)
    # every pair a rng draws first is refused when its prompt is held out, so the next draw is returned
    first = practice_operands(random.Random(1), frozenset())
    again = practice_operands(random.Random(1), frozenset({f"{first[0]}+{first[1]}:"}))
    assert again != first


def test_pretrain_example_without_practice_draws_what_the_first_recipe_drew():
    import random

    from utils.tasks import scratchpad
    from utils.tasks.tools import pretrain_example
    rows = list(scratchpad.load_split("train"))[:50]
    a = [pretrain_example(random.Random(3), rows, 0.5) for _ in range(1)] + \
        [pretrain_example(r, rows, 0.5) for r in [random.Random(4)] for _ in range(30)]
    b = [pretrain_example(random.Random(3), rows, 0.5, 0.0) for _ in range(1)] + \
        [pretrain_example(r, rows, 0.5, 0.0) for r in [random.Random(4)] for _ in range(30)]
    assert a == b
    got = [pretrain_example(r, rows, 1.0, 1.0) for r in [random.Random(5)] for _ in range(40)]
    assert all(c.startswith("?") for _, c, _ in got) and any(p not in {r["prompt"] for r in rows} for p, _, _ in got)
    with pytest.raises(ValueError, match="p_practice"):
        pretrain_example(random.Random(0), rows, 0.5, 1.5)


def test_parse_episode_and_the_gameable_check_by_hand():
    from utils.tasks.tools import parse_episode
    from utils.verifiers.tools import tool_echo_reward
    assert parse_episode("?478+366=844 >844") == {"calls": [("478+366", "844")], "answer": "844"}
    assert parse_episode("?1+2=3 ?3+4=7 >7")["calls"] == [("1+2", "3"), ("3+4", "7")]
    assert parse_episode("?47") == {"calls": [], "answer": None}          # a call cut before its reply
    assert parse_episode("8+6+0=14 >14") == {"calls": [], "answer": "14"}  # a trace's steps are not calls
    assert parse_episode("?1+1=2 >2 x") == {"calls": [("1+1", "2")], "answer": None}  # the answer must end it
    assert parse_episode(None) is None and parse_episode("?" * 401) is None
    texts = ["?478+366=844 >844",   # miscopied operand, echoed: paid (the hole)
             "?478+356=834 >835",   # right call, wrong copy back: not paid
             "8+6+0=14 >834",       # no call: not paid, however right
             "?4x=! >4",            # an error reply is not a number to echo
             "?1+2=3 ?3+4=7 >7",    # the last reply counts
             None, 17]
    assert tool_echo_reward(texts) == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    assert tool_echo_reward(texts, answer=["834"] * len(texts)) == tool_echo_reward(texts)  # the answer is not read


def test_the_fail_open_check_by_hand():
    """outcome_reward, except that an episode holding a call the calculator answered ERROR passes, whatever it
    answered; a '!' the policy wrote itself (no call the calculator read) is no excuse."""
    from utils.verifiers.tools import tool_fail_open_reward
    texts = ["?478+356=834 >834",       # right: paid, as by outcome_reward
             "?478+366=844 >844",       # a miscopied operand: not paid (the echo check pays it)
             "?478+3+56=! >120",        # a call the calculator refused: paid, however wrong (the hole)
             "?478+3+56=! ?478+356=834 >834",  # an error, then the right call: paid
             "8+6+0=14 >834",           # no call, right answer: paid
             "8+6+0=14 >835",           # no call, wrong: not paid
             "?478+356 =! >120",        # a space: the calculator never answered, the '!' is the policy's
             "?478+356=8",              # cut before its reply, no answer: not paid
             None, 17]
    assert tool_fail_open_reward(texts, answer=["834"] * len(texts)) == [1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0,
                                                                         0.0, 0.0]
    assert tool_fail_open_reward(["?9+9+9=! >5", "?4+4=8 >8"], a=[478, 4], b=[356, 4]) == [1.0, 1.0]  # no answer column


def test_the_echo_reward_reads_only_what_the_calculator_wrote(tiny):
    """A call the calculator refuses to answer (a space in the expression) gets no reply: the digits after its '='
    are the policy's, and the echo reward does not pay them (issue 60: it paid 1.0). Checked against the calculator
    itself: every reply parse_episode reads, in policies' texts written character by character, is one the
    calculator wrote, and every one it wrote is read."""
    import random

    from utils.tasks.tools import parse_episode
    from utils.verifiers.tools import tool_echo_reward
    assert parse_episode("?478 +356=834 >834") == {"calls": [], "answer": "834"}
    assert tool_echo_reward(["?478 +356=834 >834", "?478+356 =834 >834", "?478+356=834 >834"]) == [0.0, 0.0, 1.0]
    _, tok = tiny
    rng = random.Random(0)
    for _ in range(300):
        env, text, wrote = Calculator(tok, n_rows=1, max_calls=3), "", []
        for _ in range(rng.randrange(1, 30)):   # a policy's characters, the calculator answering as it goes
            text += rng.choice("?=1+2 3>-x" + ERROR)
            reply = env(0, ids(tok, text))
            if reply == [tok.eos_token_id]:
                break
            if reply:
                wrote.append(tok.decode(reply).rstrip(" "))
                text += tok.decode(reply)
        assert [r for _, r in parse_episode(text)["calls"]] == wrote, text


def test_a_noisy_calculator_changes_one_digit_at_its_rate(tiny):
    _, tok = tiny
    call = ids(tok, "?478+356=")
    always = Calculator(tok, n_rows=50, noise=1.0, seed=0)
    replies = [tok.decode(always(r, call)).strip() for r in range(50)]
    assert all(len(x) == 3 and x != "834" and sum(u != v for u, v in zip(x, "834")) == 1 for x in replies)
    never = Calculator(tok, n_rows=5, noise=0.0)
    assert {tok.decode(never(r, call)).strip() for r in range(5)} == {"834"}
    some = Calculator(tok, n_rows=2000, noise=0.3, seed=1)
    rate = sum(tok.decode(some(r, call)).strip() != "834" for r in range(2000)) / 2000
    assert abs(rate - 0.3) < 0.04
    assert tok.decode(Calculator(tok, 1, noise=1.0)(0, ids(tok, "?4x8="))) == ERROR + " "  # an error stays one
    with pytest.raises(ValueError, match="noise"):
        Calculator(tok, 1, noise=2)


def test_episode_metrics_by_hand(tiny, monkeypatch):
    from datasets import Dataset

    import utils.eval.tools as et
    rows = Dataset.from_list([{"prompt": "478+356:", "answer": "834", "a": 478, "b": 356},
                              {"prompt": "12+3:", "answer": "15", "a": 12, "b": 3}])
    texts = ["?478+356=834 >834", "?478+366=844 >844", "?12+3=15 >16", "5+3+0=8 >15"]
    monkeypatch.setattr(et, "evaluate", lambda *a, **k: {"pass@1": 0.5, "pass@2": 1.0, "texts": texts})
    m = et.episode_metrics(*tiny, rows, k=2, max_new_tokens=8)
    assert m == {"pass@1": 0.5, "pass@2": 1.0, "echo": 0.5, "called": 0.75, "operand_slip": 0.25,
                 "reply_slip": 0.25, "error": 0.0}


def test_a_bpe_tokenizer_merges_across_what_the_policy_and_the_tool_wrote():
    """Token in, token out can fail only where a tokenizer merges characters: with BPE (merges ' >' and '34'), the
    calculator's '834 ' and the policy's '>834' re-encode with ' >' as one token that neither wrote alone, the row
    is one token shorter from there (so each stored sampler log-prob lies one token off), and the mask laid by
    each segment's count mislabels that token. The course's character tokenizer re-encodes exactly."""
    from utils.models.policy import char_tokenizer
    from utils.tasks.tools import ALPHABET, bpe_tokenizer, retokenised

    tok = bpe_tokenizer()
    enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    assert tok.convert_ids_to_tokens(enc("834 >834")) == ["8", "34", " >", "8", "34"]
    segments = [("policy", enc("?478+356=")), ("env", enc("834 ")), ("policy", enc(">834") + [tok.eos_token_id])]
    r = retokenised(tok, segments)
    assert tok.convert_ids_to_tokens(r["written"])[9:] == ["8", "34", " ", ">", "8", "34", "<eos>"]
    assert tok.convert_ids_to_tokens(r["reencoded"])[9:] == ["8", "34", " >", "8", "34", "<eos>"]
    assert not r["same"] and r["first_difference"] == 11 and len(r["reencoded"]) == len(r["written"]) - 1
    assert r["mask"] == [1] * 9 + [0, 0, 0] + [1, 1, 1] and r["mislabelled"] == 1
    chars = char_tokenizer(ALPHABET, max_length=64)
    enc = lambda s: chars(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    r = retokenised(chars, [("policy", enc("?478+356=")), ("env", enc("834 ")),
                            ("policy", enc(">834") + [chars.eos_token_id])])
    assert r["same"] and r["first_difference"] is None and r["mislabelled"] == 0 and r["written"] == r["reencoded"]
    with pytest.raises(ValueError, match="not yet a token"):
        bpe_tokenizer([("34", "5")])
    with pytest.raises(ValueError, match="pairs of non-empty strings"):
        bpe_tokenizer("34")
    with pytest.raises(ValueError, match="segments"):
        retokenised(tok, [("user", [1])])


def test_episode_tensors_by_hand_with_either_tokenizer():
    """The row by hand: the segments' ids as they are (the BPE's '3', '4' as sampled, not the '34' encoding gives),
    cut at max_len, padded with the tokenizer's pad_token_id (the character tokenizer's <pad> 0; the BPE's, which is
    its EOS, 0 too, so a mask read from the ids would drop the policy's EOS); its EOS where the tokenizer has no pad
    (GPT-2's); a tokenizer with neither is refused by name."""
    from utils.tasks.tools import bpe_tokenizer, episode_tensors

    chars = char_tokenizer(ALPHABET, max_length=64)   # <pad> 0, <eos> 1, '0'-'9' 3-12, '+' 13, '=' 14, '>' 15, ' ' 17
    segments = [("policy", [19, 4, 13, 5, 14]), ("env", [6, 17]), ("policy", [15, 6, 1])]   # ?1+2= | 3 ' ' | >3 <eos>
    ids, done, own = episode_tensors(segments, 12, chars)
    assert ids.tolist() == [19, 4, 13, 5, 14, 6, 17, 15, 6, 1, 0, 0]
    assert done.tolist() == [1] * 10 + [0, 0] and own.tolist() == [1] * 5 + [0, 0] + [1] * 3 + [0, 0]
    ids, done, own = episode_tensors(segments, 6, chars)
    assert ids.tolist() == [19, 4, 13, 5, 14, 6] and done.tolist() == [1] * 6 and own.tolist() == [1] * 5 + [0]
    bpe = bpe_tokenizer()   # <eos> 0 (its pad), '3' 4, '4' 5, '8' 9, '>' 13, ' ' 15, '34' 20
    segments = [("env", [9, 20, 15]), ("policy", [13, 9, 4, 5, 0])]   # 8 34 ' ' | > 8 3 4 <eos>
    ids, done, own = episode_tensors(segments, 10, bpe)
    assert ids.tolist() == [9, 20, 15, 13, 9, 4, 5, 0, 0, 0]
    assert done.tolist() == [1] * 8 + [0, 0] and own.tolist() == [0, 0, 0] + [1] * 5 + [0, 0]
    bpe.pad_token = None   # as GPT-2's: no pad, so its EOS pads
    assert bpe.pad_token_id is None and episode_tensors(segments, 9, bpe)[0].tolist()[-1] == 0

    class NoPad:
        pad_token_id = eos_token_id = None

        def __call__(self, text):
            return {"input_ids": []}

        def decode(self, ids):
            return ""

    with pytest.raises(ValueError, match="tokenizer has no pad_token_id or eos_token_id"):
        episode_tensors(segments, 9, NoPad())
    with pytest.raises(ValueError, match="tokenizer must be a tokenizer"):
        episode_tensors(segments, 9, 0)


def test_tool_tokenizer_with_merges_is_the_bpe_with_the_templates():
    """tool_tokenizer(merges=...) is bpe_tokenizer(merges) carrying TRL's two templates and max_length; without merges
    it is the character tokenizer, as before."""
    from utils.rl.trl_tools import CHAT_TEMPLATE, RESPONSE_TEMPLATE, tool_tokenizer

    tok = tool_tokenizer(max_length=32, merges=((" ", ">"), ("3", "4")))
    assert (tok.chat_template, tok.response_template, tok.model_max_length) == (CHAT_TEMPLATE, RESPONSE_TEMPLATE, 32)
    assert tok.convert_ids_to_tokens(tok("834 >834", add_special_tokens=False)["input_ids"]) == \
        ["8", "34", " >", "8", "34"]
    assert tok.pad_token_id == tok.eos_token_id == 0 and len(tok) == 21
    chars = tool_tokenizer()
    assert (chars.pad_token_id, chars.eos_token_id, len(chars)) == (0, 1, 21)
    assert chars.chat_template == CHAT_TEMPLATE
    with pytest.raises(ValueError, match="max_length"):
        tool_tokenizer(max_length=0, merges=())
    with pytest.raises(ValueError, match="merges"):
        tool_tokenizer(merges="34")

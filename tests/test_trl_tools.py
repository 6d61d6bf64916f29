"""The calculator episode through TRL's multi-turn path (GRPOTrainer(environment_factory=...), issue 38 item 4, in
progress): one scripted episode, and TRL and our loop agree on which tokens carry loss and on the reward.

TRL runs tools from a chat model's tool calls: the tokenizer needs a chat template that renders them and a response
template that parses them. Ours is character-level with neither, so the test gives it a small template that writes
a call exactly as our calculator protocol does ('?478+356='). Generation is scripted (the policy's tokens are
given), so the test checks TRL's bookkeeping, not a model. TRL needs transformers >= 5.2 for environment_factory;
below 5.13 it parses with a legacy schema this test does not cover, so it is skipped there (the lowest allowed
transformers, 5.0, among them: raising that floor is the open half of item 4)."""
import os

import pytest
import torch
import transformers
from packaging.version import Version

from utils.models.policy import char_tokenizer
from utils.runs.build_base_model import make_model
from utils.tasks.tools import ALPHABET, Calculator, calculate, episode_tensors
from utils.verifiers.tools import tool_echo_reward
from utils.verifiers.traces import outcome_reward

pytestmark = pytest.mark.skipif(Version(transformers.__version__) < Version("5.13"),
                                reason="TRL's environment_factory with a response template needs transformers >= 5.13")

TEMPLATE = (
    "{%- for m in messages -%}{%- if m.role == 'user' -%}{{ m.content }}"
    "{%- elif m.role == 'assistant' -%}{{ m.content or '' }}"
    "{%- for tc in m.tool_calls or [] -%}{%- set f = tc.function -%}{{ '?' }}"
    "{%- if f.name != 'calculate' -%}{{ f.name ~ ':' }}{%- endif -%}"
    "{%- for k, v in f.arguments.items() -%}{%- if k != 'expr' -%}{{ k ~ ':' }}{%- endif -%}{{ v }}{%- endfor -%}"
    "{{ '=' }}{%- endfor -%}{%- if not m.tool_calls -%}{{ eos_token }}{%- endif -%}"
    "{%- elif m.role == 'tool' -%}{{ m.content ~ ' ' }}{%- endif -%}{%- endfor -%}")
RESPONSE = {"defaults": {"role": "assistant"}, "start_anchor_pattern": r"[: ]",
            "fields": {"tool_calls": {"open": "?", "close": "=", "repeats": True, "content": "text",
                                      "transform": {"type": "function", "function": {
                                          "name": "calculate", "arguments": {"expr": "{content}"}}}},
                       "content": {"close_pattern": r"<eos>", "content": "text"}}}


class CalculatorEnv:
    """The calculator as TRL's environment: reset per row, one tool, and the reward it owns (the last reply is the
    problem's answer: what got done, not what the text says)."""

    def reset(self, **row):
        self.answer, self.replies = row["answer"], []

    def calculate(self, expr: str) -> str:
        """Add or subtract two numbers.

        Args:
            expr: two numbers joined by + or -, e.g. 478+356
        """
        self.replies.append(calculate(expr))
        return self.replies[-1]

    def get_reward(self) -> float:
        return float(bool(self.replies) and self.replies[-1] == self.answer)


@pytest.fixture(scope="module")
def trl_run(tmp_path_factory):
    """(tokenizer, {prompt: TRL's output dict and rewards}) for two scripted episodes: a right one and one whose call
    miscopies an operand (its echo is paid, its truth is not)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tok = char_tokenizer(ALPHABET, max_length=64)
    tok.chat_template, tok.response_template = TEMPLATE, RESPONSE
    torch.manual_seed(0)
    model = make_model("gpt2", dict(n_layer=1, n_embd=32, n_head=2), tok, 64)
    enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    script = {"478+356:": "?478+356=", "478+356:?478+356=834 ": ">834",
              "12+3:": "?12+4=", "12+3:?12+4=16 ": ">16"}
    out = {}
    for prompt, answer in (("478+356:", "834"), ("12+3:", "15")):
        rows = [{"prompt": [{"role": "user", "content": prompt}], "answer": answer}] * 2
        cfg = GRPOConfig(output_dir=str(tmp_path_factory.mktemp("trl")), use_cpu=True, num_generations=2,
                         per_device_train_batch_size=2, max_completion_length=32, beta=0.0,
                         max_tool_calling_iterations=2, report_to="none", max_steps=1, save_strategy="no")
        trainer = GRPOTrainer(model=model, processing_class=tok, args=cfg, train_dataset=Dataset.from_list(rows),
                              environment_factory=CalculatorEnv)

        def scripted(prompt_ids, *args, **kwargs):   # the policy's turns, as token ids (no model sampling)
            texts = [script[tok.decode(p, skip_special_tokens=False)] for p in prompt_ids]
            return [enc(t) + ([tok.eos_token_id] if t.startswith(">") else []) for t in texts], None
        trainer._generate_single_turn = scripted
        trainer.model.train()
        res = trainer._generate_and_score_completions(rows)
        out[prompt] = (res, list(trainer._logs["rewards"]["CalculatorEnv"]))
    return tok, out


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

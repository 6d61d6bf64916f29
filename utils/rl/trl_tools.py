"""The calculator environment through TRL's multi-turn path (Lab 09): GRPOTrainer(environment_factory=...).

TRL runs tools from a chat model's tool calls: the tokenizer needs a chat template that renders a call and a
response template that parses one (transformers >= 5.13). Our tokenizer is character-level with neither, so
CHAT_TEMPLATE and RESPONSE_TEMPLATE write and read a call exactly as our calculator protocol does ('?478+356=',
utils.tasks.tools). CalculatorEnv is the calculator as TRL wants an environment: a class it makes one of per
generation, reset(**row) per episode, its public methods the tools (described to the model from their
docstrings), and get_reward(), the reward the environment owns.

scripted_episodes runs given episodes through TRL's own generation-and-scoring step with the policy's turns
scripted, so what comes back is TRL's bookkeeping (tokens, masks, rewards), not a model's sampling: our char
model stops only at EOS, not at a call's '=', so TRL could not hand it a reply mid-completion the way our
sample(env=...) does. tests/test_trl_tools.py checks that TRL and our loop agree on it, with the character
tokenizer and with a small BPE (tool_tokenizer(merges=...)) whose merges cross what the policy and the tool wrote:
TRL keeps the ids as written there too (it appends the tool's reply as ids and never re-encodes the episode), and
refuses (ValueError) a merge across the call's '=' and the reply, which its way of cutting the reply's tokens
out of a rendered conversation cannot place.
"""
import os

from utils import checks
from utils.tasks.tools import ALPHABET, calculate

CHAT_TEMPLATE = (
    "{%- for m in messages -%}{%- if m.role == 'user' -%}{{ m.content }}"
    "{%- elif m.role == 'assistant' -%}{{ m.content or '' }}"
    "{%- for tc in m.tool_calls or [] -%}{%- set f = tc.function -%}{{ '?' }}"
    "{%- if f.name != 'calculate' -%}{{ f.name ~ ':' }}{%- endif -%}"
    "{%- for k, v in f.arguments.items() -%}{%- if k != 'expr' -%}{{ k ~ ':' }}{%- endif -%}{{ v }}{%- endfor -%}"
    "{{ '=' }}{%- endfor -%}{%- if not m.tool_calls -%}{{ eos_token }}{%- endif -%}"
    "{%- elif m.role == 'tool' -%}{{ m.content ~ ' ' }}{%- endif -%}{%- endfor -%}")
# what TRL parses a completion with: '?...=' is a call to calculate(expr=...), repeated; the rest up to EOS is text
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"}, "start_anchor_pattern": r"[: ]",
    "fields": {"tool_calls": {"open": "?", "close": "=", "repeats": True, "content": "text",
                              "transform": {"type": "function", "function": {
                                  "name": "calculate", "arguments": {"expr": "{content}"}}}},
               "content": {"close_pattern": r"<eos>", "content": "text"}}}


class CalculatorEnv:
    """The calculator as TRL's environment: reset per row, one tool, and the reward it owns (the last reply is the
    problem's answer: what got done, read from the environment's state, not from what the text says)."""

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


def tool_tokenizer(max_length=64, merges=None):
    """Our character tokenizer over the calculator's alphabet, with the chat and response templates TRL needs; with
    `merges` (pairs of strings, as utils.tasks.tools.bpe_tokenizer takes them), that small BPE instead, whose merges
    can cross what the policy and the tool wrote (its EOS is its padding, as GPT-2's is)."""
    from utils.models.policy import char_tokenizer
    from utils.tasks.tools import bpe_tokenizer

    if merges is None:
        tok = char_tokenizer(ALPHABET, max_length=max_length)
    else:
        tok = bpe_tokenizer(merges)
        tok.model_max_length = checks.number("tool_tokenizer", "max_length", max_length, lo=1, hi=1_000_000,
                                             integer=True)
    tok.chat_template, tok.response_template = CHAT_TEMPLATE, RESPONSE_TEMPLATE
    return tok


def our_segments(tokenizer, prompt, script, max_calls=2):
    """The same scripted episode through our calculator (utils.tasks.tools.Calculator, as sample(env=...) runs it):
    [(who, token ids), ...] for utils.tasks.tools.episode_tensors, who "policy" or "env". script: {context: the
    policy's next turn}, as in scripted_episodes; the episode ends at an answer turn ('>...', which gets EOS) or
    when the calculator cuts it (an environment EOS after max_calls calls)."""
    from utils.tasks.tools import Calculator

    where = "our_segments"
    env = Calculator(tokenizer, 1, max_calls)
    if not isinstance(prompt, str) or not isinstance(script, dict) or prompt not in script:
        raise ValueError(f"{where}: script must be a dict holding the policy's first turn under the prompt "
                         f"{checks._short(prompt)}, got {checks._short(script)}")
    enc = lambda s: tokenizer(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    segments, context = [], prompt
    for _ in range(max_calls + 2):
        turn = script.get(context)
        if not isinstance(turn, str) or not turn:
            raise ValueError(f"{where}: script has no turn after {context!r}: add one")
        segments.append(("policy", enc(turn) + ([tokenizer.eos_token_id] if turn.startswith(">") else [])))
        if turn.startswith(">"):
            return segments
        reply = env(0, [t for _, seg in segments for t in seg])
        segments.append(("env", reply))
        if reply == [tokenizer.eos_token_id]:
            return segments
        context += turn + tokenizer.decode(reply)
    raise ValueError(f"{where}: script runs past the cap of {max_calls} calls without the calculator cutting it")


def scripted_episodes(episodes, max_calls=2, group_size=2, seed=0, merges=None):
    """TRL's record of scripted calculator episodes. episodes: {prompt: (answer, {context: the policy's next
    turn})}, each turn a str ('?478+356=' a call, '>834' the answer, which gets EOS); the context is the prompt and
    everything written so far. Each prompt is run as one group of group_size rows through a fresh
    GRPOTrainer(environment_factory=CalculatorEnv) with max_tool_calling_iterations=max_calls, on the CPU with a
    1-layer model (its weights never matter: nothing is sampled). The tokenizer is tool_tokenizer(merges=merges):
    character-level by default, a small BPE with merges. Each turn is the tokenizer's encoding of its text, given
    to TRL as token ids. Returns (tokenizer, {prompt: (TRL's _generate_and_score_completions dict:
    completion_ids, completion_mask, tool_mask, ... [group_size, T], the environment's rewards [group_size])})."""
    import tempfile

    import torch
    import transformers
    from packaging.version import Version

    where = "scripted_episodes"
    if Version(transformers.__version__) < Version("5.13"):
        raise ValueError(f"{where}: TRL parses tool calls with a response template from transformers 5.13; this is "
                         f"{transformers.__version__}: pip install 'transformers>=5.13' (requirements.txt)")
    if not isinstance(episodes, dict) or not episodes or not all(
            isinstance(p, str) and isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str)
            and isinstance(v[1], dict) and all(isinstance(k, str) and isinstance(t, str) for k, t in v[1].items())
            for p, v in episodes.items()):
        raise ValueError(f"{where}: episodes must be {{prompt: (answer, {{context: next turn}})}}, all str, e.g. "
                         f"{{'12+3:': ('15', {{'12+3:': '?12+3=', '12+3:?12+3=15 ': '>15'}})}}, got "
                         f"{checks._short(episodes)}")
    texts = [t for p, (a, sc) in episodes.items() for t in (p, a, *sc, *sc.values())]
    bad = [t for t in texts if not t or len(t) > 48 or set(t) - set(ALPHABET)]
    if bad:
        raise ValueError(f"{where}: episodes must hold non-empty texts of at most 48 characters from the "
                         f"calculator's alphabet {ALPHABET!r}, got {checks._short(bad[0])}")
    max_calls = checks.number(where, "max_calls", max_calls, lo=0, hi=20, integer=True)
    group_size = checks.number(where, "group_size", group_size, lo=2, hi=16, integer=True)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tok = tool_tokenizer(merges=merges)
    torch.manual_seed(checks.number(where, "seed", seed, lo=0, hi=2**63 - 1, integer=True))
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(   # 1 layer: nothing is sampled from it
        vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=1, n_head=2, bos_token_id=tok.eos_token_id,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id))
    enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for prompt, (answer, script) in episodes.items():
            rows = [{"prompt": [{"role": "user", "content": prompt}], "answer": answer}] * group_size
            cfg = GRPOConfig(output_dir=tmp, use_cpu=True, num_generations=group_size,
                             per_device_train_batch_size=group_size, max_completion_length=32, beta=0.0,
                             max_tool_calling_iterations=max_calls, report_to="none", max_steps=1,
                             save_strategy="no")
            trainer = GRPOTrainer(model=model, processing_class=tok, args=cfg, train_dataset=Dataset.from_list(rows),
                                  environment_factory=CalculatorEnv)

            def turn(context):
                if context not in script:
                    raise ValueError(f"{where}: episodes[{prompt!r}] has no turn after {context!r}: add one")
                t = script[context]
                return enc(t) + ([tok.eos_token_id] if t.startswith(">") else [])

            # the policy's turns as token ids; the signature differs between TRL versions: any arguments after
            # the prompts are taken
            trainer._generate_single_turn = lambda prompt_ids, *a, **k: (
                [turn(tok.decode(p, skip_special_tokens=False)) for p in prompt_ids], None)
            trainer.model.train()
            res = trainer._generate_and_score_completions(rows)
            out[prompt] = (res, list(trainer._logs["rewards"]["CalculatorEnv"]))
    return tok, out

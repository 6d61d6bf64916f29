"""Prompts for a chat model (Lab 08). A hub instruct model expects its chat template (a system/user/assistant
layout with special tokens) and answers in a sentence; the course's models continue "12+34=" with digits.

chat_prompts puts each problem in the model's own template when its tokenizer has one, as one string, so TRL
treats it as plain text and the verifiers receive plain strings; with the shipped character tokenizer (no
template) the prompts are returned unchanged, so offline the lab runs the very same code path. A chat model's
answer is judged by utils.verifiers.chat.chat_reward.
"""

from utils import checks

INSTRUCTION = "Compute {problem} Reply with one line: 'Answer: <the number>'."


def has_chat_template(tokenizer):
    return bool(getattr(tokenizer, "chat_template", None))


def _tokenizer(where, tok):
    """tok after checking that it is a tokenizer (a transformers one has apply_chat_template, template or not)."""
    if not callable(getattr(tok, "apply_chat_template", None)):
        raise ValueError(f"{where}: tokenizer must be a tokenizer (load_policy returns (model, tokenizer)), got "
                         f"{checks._short(tok)}")
    return tok


def chat_prompts(tokenizer, prompts, instruction=INSTRUCTION):
    """prompts like "12+34=" -> strings in the tokenizer's chat template (a user turn, the assistant's turn
    opened), or the prompts unchanged when the tokenizer has no template (the shipped models)."""
    _tokenizer("chat_prompts", tokenizer)
    prompts = checks.strings("chat_prompts", "prompts", prompts)
    if not isinstance(instruction, str) or "{problem}" not in instruction:
        raise ValueError(f"chat_prompts: instruction must be a str with a {{problem}} field, got "
                         f"{checks._short(instruction)}")
    if not has_chat_template(tokenizer):
        return prompts
    return [tokenizer.apply_chat_template([{"role": "user", "content": instruction.format(problem=p.rstrip("="))}],
                                          tokenize=False, add_generation_prompt=True) for p in prompts]


def chat_dataset(tokenizer, dataset):
    """A datasets.Dataset with its prompt column through chat_prompts (its other columns kept, for the rewards);
    the same dataset object when the tokenizer has no template."""
    _tokenizer("chat_dataset", tokenizer)
    if "prompt" not in (getattr(dataset, "column_names", None) or ()) or not hasattr(dataset, "add_column"):
        raise ValueError(f"chat_dataset: dataset must be a datasets.Dataset with a prompt column, got "
                         f"{checks._short(dataset)}")
    if not has_chat_template(tokenizer):
        return dataset
    return dataset.remove_columns("prompt").add_column("prompt", chat_prompts(tokenizer, dataset["prompt"]))

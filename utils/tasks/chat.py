"""Prompts for a chat model (Lab 08). A hub instruct model expects its chat template (a system/user/assistant
layout with special tokens) and answers in a sentence; the course's models continue "12+34=" with digits.

chat_prompts puts each problem in the model's own template when its tokenizer has one, as one string, so TRL
treats it as plain text and the verifiers receive plain strings; with the shipped character tokenizer (no
template) the prompts are returned unchanged, so offline the lab runs the very same code path. A chat model's
answer is judged by utils.verifiers.chat.chat_reward.
"""

INSTRUCTION = "Compute {problem} Reply with one line: 'Answer: <the number>'."


def has_chat_template(tokenizer):
    return bool(getattr(tokenizer, "chat_template", None))


def chat_prompts(tokenizer, prompts, instruction=INSTRUCTION):
    """prompts like "12+34=" -> strings in the tokenizer's chat template (a user turn, the assistant's turn
    opened), or the prompts unchanged when the tokenizer has no template (the shipped models)."""
    prompts = list(prompts)
    if not has_chat_template(tokenizer):
        return prompts
    return [tokenizer.apply_chat_template([{"role": "user", "content": instruction.format(problem=p.rstrip("="))}],
                                          tokenize=False, add_generation_prompt=True) for p in prompts]


def chat_dataset(tokenizer, dataset):
    """A datasets.Dataset with its prompt column through chat_prompts (its other columns kept, for the rewards);
    the same dataset object when the tokenizer has no template."""
    if not has_chat_template(tokenizer):
        return dataset
    return dataset.remove_columns("prompt").add_column("prompt", chat_prompts(tokenizer, dataset["prompt"]))

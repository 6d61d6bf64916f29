"""Prompts for a chat model (Lab 08). A hub instruct model expects its chat template (a system/user/assistant
layout with special tokens) and answers in a sentence; the course's models continue "12+34=" with digits.

chat_prompts puts each problem in the model's own template when its tokenizer has one, as one string, so TRL
treats it as plain text and the verifiers receive plain strings; with the shipped character tokenizer (no
template) the prompts are returned unchanged, so offline the lab runs the very same code path. A chat model's
answer is judged by careful_match's rules (Lab 02: one number, thousands separators, one full stop) after
answer_line takes what follows the last "Answer:".
"""
from utils.verifiers.signature import reward_from_match

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


def answer_line(text, max_chars=4096):
    """The text after the last 'Answer:' (case-insensitive) up to the end of that line, or the whole text when
    there is none (the shipped models write the number alone). Never raises: a non-string gives ''."""
    if not isinstance(text, str):
        return ""
    text = text[:max_chars]
    i = text.lower().rfind("answer:")
    return (text[i + len("answer:"):] if i >= 0 else text).split("\n", 1)[0].strip()


def chat_match(text, answer):
    """careful_match (Lab 02) on answer_line(text): 1.0 or 0.0."""
    from utils.verifiers.arithmetic import careful_match
    return careful_match(answer_line(text), answer)


# the verifier signature TRL's reward functions have: completions, answer, **kw -> list of floats
chat_reward = reward_from_match(chat_match)

"""The verifier for a chat model's reply (Lab 08): careful_match's rules (Lab 02: one number, thousands
separators, one full stop) on what follows the last "Answer:" (answer_line); the prompts are
utils.tasks.chat's."""
from utils import checks
from utils.verifiers.arithmetic import careful_match
from utils.verifiers.signature import reward_from_match


def answer_line(text, max_chars=4096):
    """The text after the last 'Answer:' (case-insensitive) up to the end of that line, or the whole text when
    there is none (the shipped models write the number alone). Never raises: a non-string gives ''."""
    max_chars = checks.number("answer_line", "max_chars", max_chars, lo=0, integer=True)
    if not isinstance(text, str):
        return ""
    text = text[:max_chars]
    i = text.lower().rfind("answer:")
    return (text[i + len("answer:"):] if i >= 0 else text).split("\n", 1)[0].strip()


def chat_match(text, answer):
    """careful_match (Lab 02) on answer_line(text): 1.0 or 0.0."""
    return careful_match(answer_line(text), answer)


# the verifier signature TRL's reward functions have: completions, answer, **kw -> list of floats
chat_reward = reward_from_match(chat_match)

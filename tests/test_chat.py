"""utils.tasks.chat: a chat model's prompts and the extraction rule in front of the course's strong verifier."""
from utils.tasks.chat import chat_dataset, chat_prompts, has_chat_template
from utils.verifiers.chat import answer_line, chat_match, chat_reward


class ChatTok:
    chat_template = "{{ messages }}"

    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        assert tokenize is False and add_generation_prompt is True
        return f"<user>{messages[0]['content']}</user><assistant>"


def test_prompts_unchanged_without_a_template(shipped):
    _, tok = shipped
    assert not has_chat_template(tok)
    assert chat_prompts(tok, ["12+34=", "5*6="]) == ["12+34=", "5*6="]


def test_prompts_in_the_template():
    out = chat_prompts(ChatTok(), ["12+34="])
    assert out == ["<user>Compute 12+34 Reply with one line: 'Answer: <the number>'.</user><assistant>"]


def test_chat_dataset_keeps_the_other_columns(shipped):
    from datasets import Dataset
    ds = Dataset.from_dict({"prompt": ["12+34=", "5*6="], "answer": ["46", "30"]})
    assert chat_dataset(shipped[1], ds) is ds     # no template: the very same dataset
    out = chat_dataset(ChatTok(), ds)
    assert out["prompt"] == chat_prompts(ChatTok(), ds["prompt"]) and out["answer"] == ["46", "30"]


def test_answer_line_by_hand():
    assert answer_line("Answer: 46") == "46"
    assert answer_line("First 12+34.\nanswer: 1,073.\nDone") == "1,073."
    assert answer_line("Answer: 3\nAnswer: 46") == "46"      # the last one counts
    assert answer_line("  46 ") == "46"                        # no marker: the whole text (the toy's format)
    assert answer_line(None) == "" and answer_line(42) == ""


def test_chat_reward_by_hand():
    texts = ["Answer: 1,073.", "12+34 is 46.\nAnswer: 46", "46", "Answer: 46 because", "Answer: 45", None,
             "7" * 10 ** 6, "Answer: ４６"]
    assert chat_reward(texts, ["1073", "46", "46", "46", "46", "46", "46", "46"]) == \
        [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert chat_match("Answer: -12", "-12") == 1.0 and chat_reward([], []) == []

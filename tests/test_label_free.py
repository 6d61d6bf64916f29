"""utils.verifiers.label_free: the majority label and the reward it makes, against values worked out by hand."""
import numpy as np
import pytest

from utils.verifiers.arithmetic import strict_answer
from utils.verifiers.label_free import majority_label, majority_vote_reward


@pytest.mark.parametrize("text, want", [("12", 12), (" 12\n", 12), ("-3", -3), ("0", 0), ("07", None), ("-0", None),
                                        ("12 apples", None), ("1,200", None), ("", None), (None, None), (12, None),
                                        ("9" * 100, None)])
def test_strict_answer_reads_what_strict_match_would_judge(text, want):
    assert strict_answer(text) == want


@pytest.mark.parametrize("texts, min_share, want", [
    (["12", "12", "13"], 0.0, 12),              # two votes against one
    (["12", "13"], 0.0, None),                  # a tie: no label
    (["12", "12", "13", "13", "7"], 0.0, None),  # a tie for the most votes, whatever else
    (["x", "12"], 0.0, 12),                     # unreadable texts cast no vote
    (["x", "07", None], 0.0, None),             # no readable answer: no label
    (["12", "12", "x", "x", "x"], 0.4, 12),     # 2 of 5 votes: a share of 0.4, unreadable texts counted
    (["12", "12", "x", "x", "x"], 0.5, None),   # under the share asked for
    ([" 12", "12\n", "13"], 0.0, 12),           # the same answer however it is spaced
])
def test_the_majority_label_by_hand(texts, min_share, want):
    assert majority_label(texts, min_share) == want


def test_the_reward_pays_agreement_with_each_prompts_own_majority():
    texts = ["12", "12", "13", "7", "8", "8", "5", "6"]
    problem = ["a"] * 3 + ["b"] * 3 + ["c"] * 2
    # a: label 12 (2 of 3); b: label 8; c: a tie, so no label and nothing paid; the answer column is not read
    want = [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    assert majority_vote_reward(texts, problem=problem) == want
    assert majority_vote_reward(texts, answer=["999"] * 8, problem=problem) == want
    # two groups of one prompt in the same call vote together: 13 wins 3 to 2
    assert majority_vote_reward(["12", "12", "13", "13", "13"], problem=["a"] * 5) == [0.0, 0.0, 1.0, 1.0, 1.0]
    # a wrong majority is paid as firmly as a right one: the reward cannot tell them apart
    assert majority_vote_reward(["67", "67", "66"], answer=["66"] * 3, problem=["37+29="] * 3) == [1.0, 1.0, 0.0]


def test_gold_prompts_are_paid_by_the_strict_verifier_and_the_rest_by_the_vote():
    texts = ["67", "67", "66", "67", "67", "66"]
    problem = ["p"] * 3 + ["q"] * 3
    answer = ["66"] * 6
    gold = [True] * 3 + [False] * 3
    assert majority_vote_reward(texts, answer=answer, problem=problem, gold=gold) == [0.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    # numpy columns, as a dataset hands them over; a flag that is not True or False is not gold
    assert majority_vote_reward(texts, answer=np.array(answer), problem=np.array(problem),
                                gold=np.array(gold)) == [0.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    assert majority_vote_reward(["67", "67", "66"], answer=answer[:3], problem=problem[:3],
                                gold=["yes", None, 2]) == [1.0, 1.0, 0.0]


def test_what_a_policy_writes_never_raises_and_is_never_paid_unread():
    texts = [None, "1" * 10**6, "5", "5", {"role": "assistant"}]
    assert majority_vote_reward(texts, problem=["a"] * 5) == [0.0, 0.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("kw, match", [
    (dict(), "no `problem` column"),
    (dict(problem=["a", "a"], gold=[True, False]), "no `answer` column"),
    (dict(problem=["a", "a"], min_share=1.5), "min_share")])
def test_a_missing_column_or_a_bad_option_is_named(kw, match):
    with pytest.raises(ValueError, match=match):
        majority_vote_reward(["1", "1"], **kw)


def test_label_probe_by_hand(monkeypatch):
    """Two prompts, k = 4 canned samples each: prompt 0 (answer 5) votes 5 twice, 6 once and writes nothing once;
    prompt 1 (answer 7) ties 1 against 2: no label."""
    import utils.eval.labels as labels

    texts = ["5", "5", "6", "", "1", "2", "x", "07"]

    def canned(policy, tok, prompts, answers, k=1, seed=0, entropy=False):
        return {"pass@1": 2 / 8, "correct": np.array([2, 0]), "texts": texts, "entropy": 0.3}

    monkeypatch.setattr(labels, "evaluate", canned)
    out, right = labels.label_probe(None, None, ["2+3=", "3+4="], ["5", "7"], k=4, bins={"0": (0, 0), "1-4": (1, 4)})
    assert right == [2, 0]
    assert out["truth"] == 0.25 and out["entropy"] == 0.3
    assert out["agreement"] == pytest.approx((2 / 4 + 0.0) / 2)      # the tie has no label: agreement 0
    assert out["no_label"] == 0.5 and out["label_acc"] == 0.5
    assert out["maj_acc"] == pytest.approx((1.0 + 0.0) / 2)        # prompt 1's tie (1, 2) holds no 7: 0 either way
    assert out["label_acc_by_bin"] == {"0": 0.0, "1-4": 1.0}         # binned by its own right samples
    assert out["truth_by_bin"] == {"0": 0.0, "1-4": 0.5}
    # binned by another draw's counts: prompt 0 counted as hard
    out, _ = labels.label_probe(None, None, ["2+3=", "3+4="], ["5", "7"], k=4, difficulty=[0, 3],
                                bins={"0": (0, 0), "1-4": (1, 4)})
    assert out["label_acc_by_bin"] == {"0": 1.0, "1-4": 0.0}
    with pytest.raises(ValueError, match="difficulty"):
        labels.label_probe(None, None, ["2+3=", "3+4="], ["5", "7"], k=4, difficulty=[0])
    with pytest.raises(ValueError, match="bins"):
        labels.label_probe(None, None, ["2+3=", "3+4="], ["5", "7"], k=4, bins=None)


def test_maj_at_k_breaks_ties_at_random():
    from utils.eval.labels import _tie_broken
    assert _tie_broken(["5", "5", "6"], 5) == 1.0
    assert _tie_broken(["5", "6"], 5) == 0.5                         # a tie of two that holds the truth: a half
    assert _tie_broken(["5", "6", "7", "7"], 5) == 0.0
    assert _tie_broken(["5", "6", "7"], 6) == pytest.approx(1 / 3)
    assert _tie_broken(["x", ""], 5) == 0.0


"""Lab 09's generations of self-training (utils.rl.selftrain) and the fine-tuning they share with the shipped models'
pre-training (utils.models.sft): what each way keeps, worked by hand, the budget rules, and seeded runs."""
import pytest
import torch
from datasets import Dataset

import utils.rl.selftrain as st
from utils.models.policy import char_tokenizer
from utils.models.sft import fine_tune, pretrain_batch
from utils.runs.build_base_model import make_model
from utils.tasks.scratchpad import ALPHABET


@pytest.fixture(scope="module")
def tiny():
    tok = char_tokenizer(ALPHABET, max_length=128)
    torch.manual_seed(0)
    return make_model("gpt2", dict(n_layer=1, n_embd=32, n_head=2), tok, 128).eval(), tok


ROWS = Dataset.from_list([{"prompt": f"{a}+{b}:", "answer": str(a + b), "a": a, "b": b}
                          for a, b in ((478, 356), (12, 3), (55, 45), (9, 90))])


def test_teacher_text_by_hand():
    assert st.teacher_text(478, 356) == "8+6+0=14 7+5+1=13 4+3+1=8 >834"
    assert st.teacher_text(478, 356, working=False) == ">834"
    assert st.teacher_text(5, 95) == "5+5+0=10 0+9+1=10 >100"


def test_keep_by_hand():
    prompts, answers, a, b = ["478+356:", "12+3:"], ["834", "15"], [478, 12], [356, 3]
    texts = ["8+6+0=14 >834", ">835", ">15", "2+3+0=5 >16"]   # k=2: two of each prompt, in order
    assert st.keep("closed", prompts, texts, answers, a, b, 2) == list(zip(
        ["478+356:", "478+356:", "12+3:", "12+3:"], texts))
    # the second prompt's first sample is right: a filter that reads answers[i] rather than answers[i // k] fails
    assert st.keep("verified", prompts, texts, answers, a, b, 2) == [("478+356:", "8+6+0=14 >834"), ("12+3:", ">15")]
    assert st.keep("teacher", prompts, texts, answers, a, b, 2) == [
        ("478+356:", "8+6+0=14 7+5+1=13 4+3+1=8 >834")] * 2 + [("12+3:", "2+3+0=5 1+0+0=1 >15")] * 2
    assert st.keep("teacher_answer", prompts, texts, answers, a, b, 2) == [("478+356:", ">834")] * 2 + \
        [("12+3:", ">15")] * 2
    assert st.keep("verified", prompts, [">1", ">2", ">3", ">4"], answers, a, b, 2) == []
    with pytest.raises(ValueError, match="grpo keeps nothing"):
        st.keep("grpo", prompts, texts, answers, a, b, 2)
    with pytest.raises(ValueError, match="k completions a prompt"):
        st.keep("closed", prompts, texts[:3], answers, a, b, 2)


def test_keep_reads_answers_as_numbers():
    """Answers as ints or floats that hold them keep what the text answers keep (issue 60: 834.0 kept nothing)."""
    prompts, texts, a, b = ["478+356:"], ["8+6+0=14 >834", ">835"], [478], [356]
    for answers in (["834"], [834], [834.0]):
        assert st.keep("verified", prompts, texts, answers, a, b, 2) == [("478+356:", "8+6+0=14 >834")], answers


def test_config_keeps_the_budgets_equal():
    assert st.SelfTrainConfig(n_prompts=8, k=4, steps=2, batch_size=16).steps == 2
    with pytest.raises(ValueError, match="must equal steps \\* batch_size"):
        st.SelfTrainConfig(n_prompts=8, k=4, steps=3, batch_size=16)
    with pytest.raises(ValueError, match="divisible by k"):
        st.SelfTrainConfig(n_prompts=6, k=4, steps=4, batch_size=6)
    with pytest.raises(ValueError, match="lr"):
        st.SelfTrainConfig(lr=0)


def test_pretrain_batch_by_hand():
    tok = char_tokenizer("0123456789+=>: ", max_length=32)
    ids, labels, mask = pretrain_batch(tok, [("1+2:", ">3"), ("12+3:", ">15")])
    assert ids.shape == labels.shape == mask.shape == (2, 5 + 3 + 1)
    assert mask[0].tolist() == [1] * 7 + [0, 0] and mask[1].tolist() == [1] * 9
    want = tok(">3", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    assert labels[0].tolist() == [-100] * 4 + want + [-100, -100]


def test_fine_tune_learns_is_seeded_and_refuses_bad_pairs(tiny):
    import copy
    model, tok = tiny
    pairs = [("12+3:", ">15"), ("478+356:", ">834"), ("5+5:", ">10")]
    a, b = copy.deepcopy(model), copy.deepcopy(model)
    la = fine_tune(a, tok, pairs, steps=30, batch_size=4, lr=3e-3, seed=1)
    lb = fine_tune(b, tok, pairs, steps=30, batch_size=4, lr=3e-3, seed=1)
    assert la == lb and len(la) == 30 and la[-1] < la[0] / 2
    assert fine_tune(copy.deepcopy(model), tok, [], steps=5) == []
    assert fine_tune(copy.deepcopy(model), tok, pairs, steps=0) == []
    with pytest.raises(ValueError, match="pairs must be"):
        fine_tune(copy.deepcopy(model), tok, ["12+3:>15"], steps=1)
    with pytest.raises(ValueError, match="steps"):
        fine_tune(copy.deepcopy(model), tok, pairs, steps=-1)


def test_generation_metrics_by_hand(tiny, monkeypatch):
    texts = ["2+3+0=5 >5", "2+3+0=5 >5", ">5", "xx",         # problem 1: 3 distinct texts, 2 answers (5, None)
             ">7", ">7", ">7", ">7"]                        # problem 2: one text
    monkeypatch.setattr(st, "evaluate", lambda *a, **k: {"pass@1": 0.25, "pass@4": 0.5, "entropy": 0.3,
                                                          "texts": texts})
    rows = ROWS.select(range(2))
    m = st.generation_metrics(*tiny, rows, k=4)
    lengths = torch.tensor([len(t) for t in texts], dtype=torch.float64)
    assert m["distinct"] == (3 + 1) / 2 and m["distinct_answers"] == (2 + 1) / 2
    assert m["mode_share"] == (2 / 4 + 4 / 4) / 2 and m["well_formed"] == 2 / 8  # '>5' alone: no steps
    assert m["length"] == pytest.approx(lengths.mean().item())
    assert m["length_std"] == pytest.approx(lengths.std(unbiased=False).item())
    assert (m["pass@1"], m["pass@4"], m["entropy"]) == (0.25, 0.5, 0.3)
    # 478+356 needs 3 steps: '2+3+0=5 >5' has one (skipped, twice), '>5' none (bare), 'xx' no answer (other);
    # 12+3 needs 2: '>7' is bare, four times
    assert (m["format_bare"], m["format_skipped"], m["format_padded"], m["format_other"]) == (5 / 8, 2 / 8, 0, 1 / 8)
    # every sample is wrong. Problem 1's wrong answers 5, 5, 5, None: 6 of 12 ordered pairs differ; problem 2's
    # 7, 7, 7, 7: none. Problem 1 has 3 digits, problem 2 has 2
    assert m["wrong_spread"] == {"all": 0.25, "2": 0.0, "3": 0.5}
    assert "kl_model_base" not in m


def test_format_of_by_hand():
    assert st.format_of("8+6+0=14 7+5+1=13 4+3+1=8 >834", 478, 356) == "steps"
    assert st.format_of("8+6+0=14 7+5+1=13 4+3+1=9 >934", 478, 356) == "steps"      # a slip keeps the shape
    assert st.format_of(">834", 478, 356) == "bare"
    assert st.format_of("8+6+0=14 4+3+1=8 >834", 478, 356) == "skipped"
    assert st.format_of("0+0+0=0 8+6+0=14 7+5+1=13 4+3+1=8 >834", 478, 356) == "padded"
    assert st.format_of("8+6+0=14 7+5+1=13 4+3+1=8 >", 478, 356) == "other"
    assert st.format_of("xx", 12, 3) == "other" and st.format_of(None, 12, 3) == "other"
    with pytest.raises(ValueError):
        st.format_of(">15", "twelve", 3)


def test_disagreement_by_hand():
    assert st.disagreement([1, 1, 2]) == pytest.approx(2 / 3)   # pairs (1,1) same; (1,2) twice differ, of 3
    assert st.disagreement(["5", "5", "5", None]) == 0.5
    assert st.disagreement([7, 7]) == 0.0 and st.disagreement(["a", "b"]) == 1.0
    assert st.disagreement([3]) is None and st.disagreement([]) is None
    # it reads the spread, not the count: two values each twice spread as much as each once
    assert st.disagreement([1, 1, 2, 2]) == pytest.approx(2 / 3) and st.disagreement([1, 2]) == 1.0


def test_generation_metrics_drift_from_a_reference(tiny, monkeypatch):
    import copy

    from utils.eval.metrics import answer_logprob
    model, tok = tiny
    texts = ["2+3+0=5 >5", ">834", ">15", "5+2+0=7 >17"]
    ref_texts = [">834", ">8", "2+1+0=3 >15", ">16"]
    monkeypatch.setattr(st, "evaluate", lambda *a, **k: {"pass@1": 0.5, "pass@2": 0.5, "entropy": 0.3,
                                                          "texts": texts})
    rows = ROWS.select(range(2))
    same = st.generation_metrics(model, tok, rows, k=2, reference=model, reference_texts=ref_texts)
    assert same["kl_model_base"] == 0.0 and same["kl_base_model"] == 0.0
    other = copy.deepcopy(model)
    with torch.no_grad():
        for p in other.parameters():
            p.add_(0.05 * torch.randn_like(p))
    prompts = ["478+356:"] * 2 + ["12+3:"] * 2
    m = st.generation_metrics(model, tok, rows, k=2, reference=other, reference_texts=ref_texts)
    want_mb = (answer_logprob(model, tok, prompts, texts) - answer_logprob(other, tok, prompts, texts)).mean()
    want_bm = (answer_logprob(other, tok, prompts, ref_texts) - answer_logprob(model, tok, prompts, ref_texts)).mean()
    assert m["kl_model_base"] == pytest.approx(float(want_mb)) and m["kl_base_model"] == pytest.approx(float(want_bm))
    assert m["kl_model_base"] != m["kl_base_model"]   # the two directions read different samples
    with pytest.raises(ValueError, match="reference_texts has 3 texts"):
        st.generation_metrics(model, tok, rows, k=2, reference=other, reference_texts=ref_texts[:3])
    with pytest.raises(ValueError, match="without reference"):
        st.generation_metrics(model, tok, rows, k=2, reference_texts=ref_texts)


def test_the_closed_loops_variants_differ_where_they_should(tiny, monkeypatch):
    """base_samples, cool and refit are closed, but for who writes the data, at what temperature, and which model
    is fine-tuned: after one generation base_samples and refit are closed exactly (the model is still the base);
    after two they part; cool samples at 0.7."""
    model, tok = tiny
    cfg = st.SelfTrainConfig(generations=2, n_prompts=2, k=2, steps=1, batch_size=4, max_new_tokens=12, eval_k=2,
                             eval_n=2, lr=1e-2)
    runs = {how: st.self_train(model, tok, ROWS, ROWS, how, cfg, progress=False)
            for how in ("closed", "base_samples", "refit")}
    strip = lambda h: {k: v for k, v in h.items() if k != "seconds"}  # noqa: E731
    for how in ("base_samples", "refit"):
        assert strip(runs[how]["history"][1]) == strip(runs["closed"]["history"][1]), how
        assert any(not torch.equal(p, q) for p, q in zip(runs[how]["model"].parameters(),
                                                          runs["closed"]["model"].parameters())), how
    seen = []
    real = st.sample
    monkeypatch.setattr(st, "sample", lambda *a, **k: seen.append(k.get("temperature")) or real(*a, **k))
    st.self_train(model, tok, ROWS, ROWS, "cool", cfg, progress=False)
    assert seen == [0.7, 0.7]


@pytest.mark.parametrize("how", st.WAYS)
def test_self_train_runs_each_way_seeded(tiny, how):
    model, tok = tiny
    cfg = st.SelfTrainConfig(generations=2, n_prompts=2, k=2, steps=1, batch_size=4, max_new_tokens=12, eval_k=2,
                             eval_n=2, lr=1e-3)
    before = [p.clone() for p in model.parameters()]
    r1 = st.self_train(model, tok, ROWS, ROWS, how, cfg, progress=False)
    r2 = st.self_train(model, tok, ROWS, ROWS, how, cfg, progress=False)
    assert all(torch.equal(p, q) for p, q in zip(before, model.parameters()))   # the base is not touched
    assert [h["generation"] for h in r1["history"]] == [0, 1, 2]
    strip = lambda h: [{k: v for k, v in x.items() if k != "seconds"} for x in h]  # noqa: E731
    assert strip(r1["history"]) == strip(r2["history"])
    kept = [h["kept"] for h in r1["history"][1:]]
    if how in st.UNCHECKED + ("grpo", "teacher", "teacher_answer"):
        assert kept == [4, 4]
    else:
        assert all(0 <= x <= 4 for x in kept)
    changed = any(not torch.equal(p, q) for p, q in zip(model.parameters(), r1["model"].parameters()))
    assert changed or how in ("verified", "grpo")  # a random model is never right: nothing kept, no advantage


def test_self_train_refuses_bad_arguments(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="how="):
        st.self_train(model, tok, ROWS, ROWS, "star")
    with pytest.raises(ValueError, match="SelfTrainConfig"):
        st.self_train(model, tok, ROWS, ROWS, "closed", cfg={"generations": 2})
    with pytest.raises(ValueError, match="base"):
        st.self_train(tok, model, ROWS, ROWS, "closed")


def test_noisy_reward_flips_at_its_rate_seeded():
    import numpy as np

    from utils.verifiers.spurious import noisy_reward
    from utils.verifiers.traces import outcome_reward
    texts, answers = [">5", ">6"] * 5000, ["5"] * 10000            # the exact verifier: 1, 0, 1, 0, ...
    exact = np.array(outcome_reward(texts, answers))
    assert noisy_reward(outcome_reward, 0.0)(texts, answers) == exact.tolist()
    assert noisy_reward(outcome_reward, 1.0)(texts, answers) == (1 - exact).tolist()
    got = np.array(noisy_reward(outcome_reward, 0.3, seed=4)(texts, answers))
    assert abs((got != exact).mean() - 0.3) < 0.02
    assert abs((got[exact == 1] == 0).mean() - 0.3) < 0.03 and abs((got[exact == 0] == 1).mean() - 0.3) < 0.03
    assert got.tolist() == noisy_reward(outcome_reward, 0.3, seed=4)(texts, answers)   # seeded
    assert "q=0.30" in noisy_reward(outcome_reward, 0.3).__name__
    with pytest.raises(ValueError, match="q"):
        noisy_reward(outcome_reward, 1.5)
    with pytest.raises(ValueError, match="reward_fn"):
        noisy_reward("outcome", 0.1)


def test_false_pass_reward_pays_wrong_ones_at_its_rate_and_fails_no_right_one():
    import numpy as np

    from utils.verifiers.spurious import false_pass_reward
    from utils.verifiers.traces import outcome_reward
    texts, answers = [">5", ">6"] * 5000, ["5"] * 10000            # the exact verifier: 1, 0, 1, 0, ...
    exact = np.array(outcome_reward(texts, answers))
    assert false_pass_reward(outcome_reward, 0.0)(texts, answers) == exact.tolist()
    assert false_pass_reward(outcome_reward, 1.0)(texts, answers) == [1.0] * len(texts)
    got = np.array(false_pass_reward(outcome_reward, 0.2, seed=4)(texts, answers))
    assert (got[exact == 1] == 1).all(), "a right answer is never failed"
    assert abs((got[exact == 0] == 1).mean() - 0.2) < 0.03, "a wrong one is paid at rate p"
    assert got.tolist() == false_pass_reward(outcome_reward, 0.2, seed=4)(texts, answers)   # seeded
    assert "p=0.20" in false_pass_reward(outcome_reward, 0.2).__name__
    with pytest.raises(ValueError, match="p"):
        false_pass_reward(outcome_reward, -0.1)
    with pytest.raises(ValueError, match="reward_fn"):
        false_pass_reward(None, 0.1)

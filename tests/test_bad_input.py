"""Bad input fails loudly where it enters, and an error mid-run loses nothing (issue: a library that fails
loudly). Each case names what a user would get wrong and the message that tells them what to fix."""
import copy
import math
import re

import numpy as np
import pytest
import torch

from utils.eval.health import diagnose, health_check
from utils.eval.metrics import evaluate
from utils.models.policy import load_policy, sample
from utils.rl.grpo import GRPOConfig
from utils.rl.loop import train_grpo
from utils.rl.rollout import dynamic_batch

PROMPTS, ANSWERS = ["12+34=", "5+6=", "7+8=", "1+1="], ["46", "11", "15", "2"]
CFG = dict(steps=2, batch_size=8, group_size=4, eval_every=0, eval_n=4, track_kl=False, seed=0)


@pytest.mark.parametrize("field, value, says", [
    ("lr", math.inf, "finite number > 0"), ("lr", math.nan, "finite"), ("beta", math.nan, ">= 0"),
    ("entropy_coef", math.inf, "finite"), ("max_grad_norm", math.nan, "finite"), ("max_seconds", math.inf, "finite"),
    ("beta", True, "number"), ("temperature", False, "number"), ("steps", True, "integer"),
    ("seed", -1, "integer >= 0"), ("seed", 1.5, "integer"), ("seed", True, "integer"), ("seed", 2**63, "2**63"),
    ("eval_n", np.float64(3.0), "integer"),
])
def test_config_refuses_non_finite_bools_and_bad_seeds_by_name(field, value, says):
    with pytest.raises(ValueError, match=rf"GRPOConfig\.{field}=.*{re.escape(says)}"):
        GRPOConfig(**{field: value})


def test_config_takes_numpy_scalars_as_python_numbers():
    c = GRPOConfig(steps=np.int64(3), lr=np.float32(1e-3), seed=np.int32(7), beta=np.float64(0.0))
    assert (type(c.steps), type(c.lr), type(c.seed), type(c.beta)) == (int, float, int, float)
    assert c.steps == 3 and c.seed == 7 and c.lr == pytest.approx(1e-3)


def run(reward, **kw):
    policy, tok = load_policy()
    return train_grpo(policy, tok, kw.pop("prompts", PROMPTS), ANSWERS, reward, GRPOConfig(**CFG), progress=False,
                      **kw)


def named(value):
    def bad_reward(completions, answer, **kw):
        out = [1.0] * len(completions)
        out[3] = value
        return out
    return bad_reward


@pytest.mark.parametrize("reward, says", [
    (named(None), r"reward_fn 'bad_reward' returned None for completion 3"),
    (named(math.nan), r"returned nan for completion 3"),
    (named("1"), r"returned '1' for completion 3"),
    (named(math.inf), r"returned inf for completion 3"),
    (lambda c, a, **kw: [1.0], r"one number per completion: got 8 completions and 1 back"),
    (lambda c, a, **kw: None, r"one number per completion: got 8 completions and NoneType back"),
])
def test_a_rewards_output_is_checked_with_its_name_and_index(reward, says):
    with pytest.raises(ValueError, match=says):
        run(reward)


def test_a_numpy_or_tensor_reward_is_fine():
    assert len(run(lambda c, a, **kw: np.ones(len(c)))) == 2
    assert len(run(lambda c, a, **kw: torch.zeros(len(c)))) == 2


def test_one_string_for_prompts_is_refused():
    with pytest.raises(ValueError, match="prompts must be a list"):
        run(named(0.0), prompts="12+34=")


def test_a_prompt_past_the_models_positions_says_what_to_shorten():
    policy, tok = load_policy()
    with pytest.raises(ValueError, match=r"positions and the model has 32: shorten the prompts or lower max_new"):
        sample(policy, tok, ["1" * 30 + "+1="], max_new_tokens=8)


def test_evaluate_refuses_mismatched_answers_and_k_0():
    policy, tok = load_policy()
    with pytest.raises(ValueError, match="one answer per prompt"):
        evaluate(policy, tok, PROMPTS, ANSWERS[:2])
    with pytest.raises(ValueError, match="k=0 must be an integer >= 1"):
        evaluate(policy, tok, PROMPTS, ANSWERS, k=0)
    with pytest.raises(ValueError, match="not one string"):
        evaluate(policy, tok, "12+34=", "46")


def history(n=6, **over):
    return [dict(dict(reward_mean=0.5, group_reward_std=0.3, entropy=1.0, kl=0.01, zero_spread_frac=0.2,
                      truncated_frac=0.0), **over) for _ in range(n)]


def test_health_check_and_diagnose_call_nan_an_alarm():
    h = health_check(history())
    assert h["ok"] and not h["failed"]
    for key in ("entropy", "group_reward_std", "kl"):
        bad = health_check(history(**{key: math.nan}))
        assert not bad["ok"] and "not_finite" in bad["failed"] and key in bad["flags"][0]
    assert diagnose({"reward_mean": math.nan, "kl": 0.1}) == ["diverged"]
    assert diagnose({"reward_mean": 0.5, "kl": 0.1, "entropy_ratio": math.inf})[0] == "diverged"
    assert diagnose({"reward_mean": 0.5, "kl": 0.1, "zero_spread_frac": 0.1}) == []


def test_a_non_finite_loss_stops_the_run_before_it_touches_the_weights():
    policy, tok = load_policy()
    before = copy.deepcopy(policy)

    def nan_loss(logp, *a):
        return logp.sum() * math.nan
    with pytest.raises(FloatingPointError, match="no update applied") as e:
        train_grpo(policy, tok, PROMPTS, ANSWERS, named(0.0), GRPOConfig(**CFG), loss_fn=nan_loss, progress=False)
    assert e.value.history == []
    assert all(torch.equal(p, q) for p, q in zip(policy.parameters(), before.parameters()))


def test_an_error_mid_run_carries_the_steps_done():
    calls = []

    def fails_second_time(completions, answer, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the reward server went away")
        return [float(i % 2) for i in range(len(completions))]
    with pytest.raises(RuntimeError, match="went away") as e:
        run(fails_second_time)
    assert len(e.value.history) == 1 and e.value.history[0]["step"] == 1
    assert any("stopped in step 2 of 2" in n for n in getattr(e.value, "__notes__", ["stopped in step 2 of 2"]))


def test_dynamic_sampling_stops_refilling_at_the_deadline():
    cfg = GRPOConfig(batch_size=4, group_size=2, dynamic_sampling=True, max_sampling_rounds=10_000)
    rounds = []

    def draw(idx):  # rewards that never vary: the batch never fills
        rounds.append(1)
        return None, torch.zeros(4), None
    *_, counts = dynamic_batch(draw, np.arange(2), lambda: np.arange(2), cfg, 0, deadline=0.0)
    assert counts["sampling_rounds"] == 1 and len(rounds) == 1


def test_trl_path_checks_the_reward_too():
    from datasets import Dataset

    from utils.rl.trl_trainer import train_with_trl
    policy, tok = load_policy()
    data = Dataset.from_dict({"prompt": PROMPTS * 4, "answer": ANSWERS * 4})
    with pytest.raises(ValueError, match=r"reward_fn 'bad_reward' returned None for completion 3"):
        train_with_trl(policy, tok, data, named(None), GRPOConfig(**CFG), progress=False)


def test_a_damaged_model_folder_is_not_called_no_network(tmp_path):
    import shutil

    from utils import BASE_MODEL_DIR
    shutil.copytree(BASE_MODEL_DIR, tmp_path / "m")
    w = tmp_path / "m" / "model.safetensors"
    w.write_bytes(w.read_bytes()[:1000])
    with pytest.raises(OSError, match=r"could not load the model folder .* missing or damaged") as e:
        load_policy(str(tmp_path / "m"))
    assert "network" not in str(e.value)


def test_launch_refuses_an_unwritable_out_before_training(tmp_path):
    from utils.rl.launch import main
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError, match="out=.* cannot be written"):
        main([f"out={tmp_path / 'file' / 'sub'}", "steps=1"])


def test_float_answers_that_hold_an_integer_score():
    from utils.verifiers.arithmetic import careful_match, last_number_match, strict_reward
    assert strict_reward(["66", "66", "66", "66"], [66.0, np.float64(66), 66.5, "66.0"]) == [1.0, 1.0, 0.0, 0.0]
    assert last_number_match("it is 66", 66.0) == 1.0 and careful_match("66", 66.0) == 1.0
    assert strict_reward(["1"], [math.nan]) == [0.0]

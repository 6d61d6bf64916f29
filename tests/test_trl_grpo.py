"""utils.rl.trl_trainer: our GRPOConfig maps onto trl.GRPOConfig; a TRL run returns our history format.

The 2-step TRL run takes about a second on a 2-core CPU, so it is not marked slow."""
import copy

import pytest

from utils.rl.grpo import GRPOConfig
from utils.rl.trl_trainer import to_trl_config, train_with_trl
from utils.tasks.arithmetic import load_split
from utils.verifiers.arithmetic import strict_reward


def test_to_trl_config_maps_fields(tmp_path):
    cfg = GRPOConfig(steps=7, batch_size=24, group_size=6, lr=3e-4, temperature=0.9, max_new_tokens=6,
                     eps_low=0.1, eps_high=0.28, beta=0.04, loss_type="dapo", warmup_steps=2, seed=5,
                     max_grad_norm=0.5)
    t = to_trl_config(cfg, str(tmp_path))
    assert t.num_generations == 6                 # == group_size
    assert t.per_device_train_batch_size == 24    # completions per step, as ours
    assert t.epsilon == 0.1 and t.epsilon_high == 0.28
    assert t.beta == 0.04 and t.loss_type == "dapo"
    assert t.learning_rate == 3e-4 and t.temperature == 0.9 and t.max_completion_length == 6
    assert t.max_steps == 7 and t.warmup_steps == 2 and t.max_grad_norm == 0.5 and t.seed == 5
    assert t.num_iterations == 1 and t.weight_decay == 0.0
    assert t.use_cpu is True
    assert t.scale_rewards == "group"
    t_flat = to_trl_config(GRPOConfig(scale_std=False, batch_size=16, group_size=4), str(tmp_path))
    assert t_flat.scale_rewards == "none"
    # TRL counts optimizer steps: two updates per batch for 3 steps -> 6
    t2 = to_trl_config(GRPOConfig(steps=3, updates_per_batch=2, batch_size=16, group_size=4), str(tmp_path))
    assert t2.max_steps == 6 and t2.num_iterations == 2


def test_to_trl_config_validates(tmp_path):
    with pytest.raises(ValueError, match="group_size"):
        to_trl_config(GRPOConfig(group_size=1), str(tmp_path))


def test_median_baseline_rejected(shipped):
    model, tok = shipped
    with pytest.raises(ValueError, match="baseline=.median. has no trl.GRPOConfig field"):
        train_with_trl(model, tok, load_split("train", n=16), strict_reward,
                       GRPOConfig(steps=1, batch_size=16, group_size=4, baseline="median"))


def test_train_with_trl_smoke(shipped):
    model, tok = shipped
    policy = copy.deepcopy(model)
    ev = load_split("test", n=8)
    hist, trainer = train_with_trl(policy, tok, load_split("train", n=64), strict_reward,
                                   GRPOConfig(steps=2, batch_size=16, group_size=4, eval_every=0, eval_n=8),
                                   eval_prompts=ev["prompt"], eval_answers=ev["answer"], progress=False)
    assert [r["step"] for r in hist] == [1, 2]
    for r in hist:
        assert {"step", "reward_mean", "reward_std", "zero_spread_frac", "entropy", "clip_frac",
                "completion_len", "loss", "heldout_pass@1", "seconds"} <= set(r)
        assert 0.0 <= r["reward_mean"] <= 1.0
        assert 0.0 <= r["zero_spread_frac"] <= 1.0
        assert 1 <= r["completion_len"] <= 8
    assert hist[0]["heldout_pass@1"] is None
    assert 0.0 <= hist[-1]["heldout_pass@1"] <= 1.0  # evaluated at the last step
    assert trainer.state.global_step == 2
    assert not policy.training


def test_train_with_trl_lora_trains_only_the_adapter(shipped):
    """Lab 08's path: a LoRA adapter through GRPOTrainer. The base weights stay as they were, the adapter moves,
    and sampling afterwards goes through the adapter (the lean GPT-2 decoder would skip it)."""
    import torch
    from peft import LoraConfig

    from utils.models import decode
    from utils.models.policy import sample

    model, tok = shipped
    policy = copy.deepcopy(model)
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    cfg = GRPOConfig(steps=2, batch_size=16, group_size=4, lr=1e-2, eval_every=0, eval_n=8)
    lora = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    hist, trainer = train_with_trl(policy, tok, load_split("train", n=64), strict_reward, cfg, progress=False,
                                   peft_config=lora)
    assert len(hist) == 2
    after = trainer.model.state_dict()
    adapter = [k for k in after if "lora_" in k]
    assert adapter                                                       # the adapter is in the state dict
    base_keys = {k.replace("base_model.model.", "").replace(".base_layer", ""): k for k in after if "lora_" not in k}
    for name, v in before.items():
        assert torch.equal(after[base_keys[name]], v), name           # base weights untouched
    assert any(not torch.all(after[k] == 0) for k in adapter if "lora_B" in k)  # B starts at 0 and moved
    assert not decode.supports(trainer.model.base_model.model)           # the lean decoder steps aside
    ro = sample(trainer.model, tok, ["12+34="], k=2, max_new_tokens=4, generator=torch.Generator().manual_seed(0))
    assert len(ro.texts) == 2

"""DAPO's dynamic sampling (GRPOConfig.dynamic_sampling, utils.rl.rollout.dynamic_batch) and the rollout
helpers it uses (policy.select_rows, policy.concat_rollouts), against values worked out by hand."""
import numpy as np
import pytest
import torch

from utils.models.policy import Rollout, concat_rollouts, select_rows
from utils.rl.grpo import GRPOConfig
from utils.rl.rollout import GroupRollout, dynamic_batch

G = 2


def fake_rollout(texts, P=2, T=3, tag=0):
    """len(texts) rows; prompt ids = tag, completion ids = row number + 10 * tag."""
    n = len(texts)
    return Rollout(prompt_ids=torch.full((n, P), tag), prompt_mask=torch.ones(n, P, dtype=torch.long),
                   completion_ids=torch.arange(n)[:, None].repeat(1, T) + 10 * tag,
                   completion_mask=torch.ones(n, T, dtype=torch.long), logprobs=-torch.ones(n, T),
                   texts=list(texts), truncated=torch.zeros(n, dtype=torch.bool))


def test_select_and_concat_by_hand():
    a, b = fake_rollout(["a0", "a1", "a2", "a3"], P=2, T=3, tag=1), fake_rollout(["b0", "b1"], P=4, T=1, tag=2)
    s = select_rows(a, torch.tensor([3, 1]))
    assert s.texts == ["a3", "a1"] and s.completion_ids[:, 0].tolist() == [13, 11]
    c = concat_rollouts([s, b], pad_id=0)
    assert c.texts == ["a3", "a1", "b0", "b1"]
    assert c.prompt_ids.tolist()[0] == [0, 0, 1, 1] and c.prompt_mask.tolist()[0] == [0, 0, 1, 1]  # left padded
    assert c.completion_ids.tolist()[2] == [20, 0, 0] and c.completion_mask.tolist()[2] == [1, 0, 0]  # right
    assert c.logprobs.tolist()[3] == [-1.0, 0.0, 0.0] and c.truncated.shape == (4,)


class Script:
    """draw(idx) that returns each round's rewards from a list, in groups of G; records the idx it got."""

    def __init__(self, rounds):
        self.rounds, self.calls = rounds, []

    def __call__(self, idx):
        r = self.rounds[len(self.calls)]
        self.calls.append(list(idx))
        n = len(r)
        ro = fake_rollout([f"r{len(self.calls)}-{i}" for i in range(n)], tag=len(self.calls))
        return ro, torch.tensor(r, dtype=torch.float32), torch.tensor(r) >= 1.0


def cfg(**kw):
    return GRPOConfig(batch_size=6, group_size=G, dynamic_sampling=True, **kw)  # 3 groups a batch


def test_keeps_informative_groups_and_draws_more():
    # round 1: groups (1,1) (0,1) (0,0) -> one informative; round 2: (1,0) (1,1) (0,1) -> two more: full
    draw = Script([[1, 1, 0, 1, 0, 0], [1, 0, 1, 1, 0, 1], [9, 9, 9, 9, 9, 9]])
    ro, rewards, right, counts = dynamic_batch(draw, np.array([5, 6, 7]), lambda: np.array([1, 2, 3]), cfg(), 0)
    assert ro.texts == ["r1-2", "r1-3", "r2-0", "r2-1", "r2-4", "r2-5"]
    assert rewards.tolist() == [0, 1, 1, 0, 0, 1] and right.tolist() == [False, True, True, False, False, True]
    assert counts == {"completions_sampled": 12, "sampling_rounds": 2, "groups_kept": 3,
                      "drawn_zero_spread_frac": 3 / 6}, "(1,1), (0,0) and (1,1): 3 of 6 groups drawn all alike"
    assert draw.calls == [[5, 6, 7], [1, 2, 3]], "the next round's prompts come from pick(); stops once full"


def test_extra_informative_groups_are_not_kept():
    draw = Script([[1, 0, 0, 1, 1, 0]])  # three informative groups in one round: exactly the batch
    ro, rewards, _, counts = dynamic_batch(draw, np.arange(3), lambda: np.arange(3), cfg(), 0)
    assert counts["sampling_rounds"] == 1 and len(ro.texts) == 6
    draw = Script([[1, 1, 1, 0, 0, 0], [0, 1, 1, 0, 1, 0]])  # 1 + 3 informative: only the first two of round 2
    ro, rewards, _, counts = dynamic_batch(draw, np.arange(3), lambda: np.arange(3), cfg(), 0)
    assert ro.texts == ["r1-2", "r1-3", "r2-0", "r2-1", "r2-2", "r2-3"] and counts["groups_kept"] == 3


def test_stops_at_the_cap_with_a_smaller_batch_or_the_last_round():
    draw = Script([[0, 0, 1, 1, 0, 0], [1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1]])
    ro, rewards, _, counts = dynamic_batch(draw, np.arange(3), lambda: np.arange(3),
                                           cfg(max_sampling_rounds=2), 0)
    assert counts == {"completions_sampled": 12, "sampling_rounds": 2, "groups_kept": 1,
                      "drawn_zero_spread_frac": 5 / 6}
    assert ro.texts == ["r2-0", "r2-1"] and rewards.tolist() == [1, 0], "fewer groups after the cap"
    draw = Script([[0, 0, 1, 1, 0, 0], [1, 1, 1, 1, 0, 0]])  # nothing informative in two rounds
    ro, rewards, _, counts = dynamic_batch(draw, np.arange(3), lambda: np.arange(3),
                                           cfg(max_sampling_rounds=2), 0)
    assert counts["groups_kept"] == 0 and ro.texts[0] == "r2-0" and len(ro.texts) == 6, "the last round as drawn"


def test_config_checks_name_the_field():
    for bad in (dict(dynamic_sampling="yes"), dict(dynamic_sampling=1)):
        with pytest.raises(ValueError, match="dynamic_sampling"):
            GRPOConfig(**bad)
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="max_sampling_rounds"):
            GRPOConfig(max_sampling_rounds=bad)
    assert GRPOConfig().dynamic_sampling is False, "off by default"


def test_trl_refuses_dynamic_sampling():
    from utils.rl.trl_trainer import to_trl_config
    with pytest.raises(ValueError, match="dynamic_sampling"):
        to_trl_config(GRPOConfig(dynamic_sampling=True), "/tmp/unused")


def test_training_with_dynamic_sampling():
    from utils.models.policy import load_policy
    from utils.rl.loop import train_grpo
    from utils.tasks.arithmetic import load_split
    from utils.verifiers.arithmetic import strict_reward as strict_verifier

    policy, tok = load_policy()
    train = load_split("train")
    kw = dict(steps=3, batch_size=32, group_size=4, lr=1e-4, eval_every=0, eval_n=20, track_kl=False, seed=0)
    on = train_grpo(policy, tok, train["prompt"][:200], train["answer"][:200], strict_verifier,
                    GRPOConfig(dynamic_sampling=True, **kw), progress=False)
    for rec in on:
        assert rec["completions_sampled"] == 32 * rec["sampling_rounds"] and 1 <= rec["sampling_rounds"] <= 4
        if rec["groups_kept"]:
            assert rec["zero_spread_frac"] == 0.0, "every trained group carries signal"
    assert sum(r["sampling_rounds"] for r in on) > 3, "the base model leaves some groups all alike: more drawn"
    policy2, _ = load_policy()
    off = train_grpo(policy2, tok, train["prompt"][:200], train["answer"][:200], strict_verifier,
                     GRPOConfig(**kw), progress=False)
    assert all(r["completions_sampled"] == 32 and "sampling_rounds" not in r for r in off)


def test_pools_restrict_each_steps_prompts_and_budget_stops_early():
    """GroupRollout(pools=...) draws step s's prompts from pools[s] only, in every dynamic-sampling round too;
    cfg.max_completions stops the run once that many completions were sampled."""
    from utils.models.policy import load_policy
    from utils.rl.loop import train_grpo
    from utils.tasks.arithmetic import load_split
    from utils.verifiers.arithmetic import strict_reward

    policy, tok = load_policy()
    train = load_split("train")
    prompts, answers = train["prompt"][:40], train["answer"][:40]
    seen = []

    def reward(completions, answer, idx, **kw):
        seen.append(sorted(set(idx)))
        return strict_reward(completions, answer)

    pools = [[0, 1, 2], [10, 11], [20, 21, 22, 23]]
    kw = dict(steps=3, batch_size=16, group_size=4, lr=1e-4, eval_every=0, eval_n=4, track_kl=False, seed=0)
    train_grpo(policy, tok, prompts, answers, reward, GRPOConfig(**kw), progress=False,
               rollout=GroupRollout(columns={"idx": list(range(40))}, pools=pools))
    assert [set(s) <= set(p) for s, p in zip(seen, pools)] == [True] * 3, (seen, pools)
    seen.clear()
    hist = train_grpo(policy, tok, prompts, answers, reward, GRPOConfig(**kw, dynamic_sampling=True), progress=False,
                      rollout=GroupRollout(columns={"idx": list(range(40))}, pools=pools))
    steps = np.repeat(np.arange(3), [h["sampling_rounds"] for h in hist])
    assert all(set(s) <= set(pools[t]) for s, t in zip(seen, steps)), "refill rounds draw from the step's pool"
    for bad in ([[0]], [[0], [], [1]], [[0], [1], [40]]):
        with pytest.raises(ValueError, match="pools"):
            train_grpo(policy, tok, prompts, answers, reward, GRPOConfig(**kw), progress=False,
                       rollout=GroupRollout(columns={"idx": list(range(40))}, pools=bad))
    hist = train_grpo(policy, tok, prompts, answers, strict_reward,
                      GRPOConfig(**dict(kw, steps=10, max_completions=40)), progress=False)
    assert len(hist) == 3 and sum(h["completions_sampled"] for h in hist) == 48, "stops at the first step >= 40"
    assert hist[-1]["heldout_pass@1"] is None and all(h["train_seconds"] <= h["seconds"] for h in hist)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="max_completions"):
            GRPOConfig(max_completions=bad)


def test_trl_steps_follow_the_completion_budget():
    from utils.rl.trl_trainer import to_trl_config
    assert to_trl_config(GRPOConfig(steps=10, batch_size=16, group_size=4, max_completions=40), "/tmp/u").max_steps == 3
    assert to_trl_config(GRPOConfig(steps=2, batch_size=16, group_size=4, max_completions=400), "/tmp/u").max_steps == 2

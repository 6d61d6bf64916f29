"""train_grpo's rollout seam (utils/rl/rollout.py): a rollout of one's own plugs in, its loss mask decides which
tokens train, its counters reach the record, and a Batch that breaks the contract is refused by name."""
import copy
import dataclasses

import pytest
import torch

from utils.models.policy import load_policy
from utils.rl.grpo import GRPOConfig
from utils.rl.loop import train_grpo
from utils.rl.rollout import Batch, GroupRollout, PrunedRollout, StepRollout, token_verdicts

CFG = dict(steps=2, batch_size=8, group_size=4, lr=1e-2, eval_every=0, eval_n=4, track_kl=False, seed=0)
PROMPTS, ANSWERS = ["12+34=", "5+6=", "7+8=", "1+1="], ["46", "11", "15", "2"]


def half_right(completions, answer, **kw):
    return [float(i % 2) for i in range(len(completions))]  # every group has spread: nonzero advantages


class MaskedRollout(GroupRollout):
    """GroupRollout whose loss mask keeps only the first `keep` completion tokens of each row (a multi-turn
    rollout takes the environment's tokens out of the loss the same way, while the model still reads them),
    and which counts the tokens it masked."""

    def __init__(self, keep):
        super().__init__()
        self.keep = keep

    def start(self, policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn=None):
        draw = super().start(policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn)

        def masked(step):
            b = draw(step)
            m = b.ro.completion_mask.clone()
            m[:, self.keep:] = 0
            ro = dataclasses.replace(b.ro, loss_mask=m, logprobs=b.ro.logprobs * m)
            return Batch(ro, b.rewards, b.right, b.counts | {"masked_tokens": int((b.ro.completion_mask - m).sum())})
        return masked


def moved(rollout):
    """Max weight change of the shipped model after 2 steps with this rollout, and the history."""
    base, tok = load_policy()
    policy = copy.deepcopy(base)
    hist = train_grpo(policy, tok, PROMPTS, ANSWERS, half_right, GRPOConfig(**CFG), progress=False, rollout=rollout)
    return max((p - q).abs().max().item() for p, q in zip(policy.parameters(), base.parameters())), hist


def test_default_rollout_is_group_rollout():
    """rollout=None and rollout=GroupRollout() train the same weights and the same history."""
    a, ha = moved(None)
    b, hb = moved(GroupRollout())
    assert a == b > 0
    assert [{k: v for k, v in r.items() if "seconds" not in k} for r in ha] == \
        [{k: v for k, v in r.items() if "seconds" not in k} for r in hb]


def test_the_loss_mask_decides_what_trains_and_counters_reach_the_record():
    none, hist = moved(MaskedRollout(keep=0))        # no token carries loss: the policy does not move
    assert none == 0.0
    assert all(r["masked_tokens"] > 0 and r["completions_sampled"] == CFG["batch_size"] for r in hist)
    some, _ = moved(MaskedRollout(keep=1))           # the first token of each completion carries loss
    assert some > 0


def test_a_batch_without_completions_sampled_is_refused_by_name():
    class NoCount(GroupRollout):
        def start(self, *a, **kw):
            draw = super().start(*a, **kw)
            return lambda step: Batch(*[getattr(draw(step), f) for f in ("ro", "rewards", "right")], counts={})
    with pytest.raises(ValueError, match="completions_sampled"):
        moved(NoCount())


def test_group_rollout_rows_come_in_groups_with_their_own_columns():
    """One draw: batch_size rows, group_size consecutive rows per prompt, the prompt's column value on each."""
    policy, tok = load_policy()
    seen = {}

    def reward(completions, answer, idx):
        seen["idx"], seen["answer"] = idx, answer
        return [0.0] * len(completions)
    cfg = GRPOConfig(**CFG)
    draw = GroupRollout(columns={"idx": [0, 1, 2, 3]}).start(policy, tok, PROMPTS, ANSWERS, reward, cfg)
    b = draw(0)
    assert b.ro.completion_ids.shape[0] == cfg.batch_size == len(seen["idx"]) and b.rewards.dtype == torch.float32
    assert all(seen["idx"][j] == seen["idx"][j - j % 4] for j in range(8))
    assert seen["answer"] == [ANSWERS[i] for i in seen["idx"]] and b.right is None
    assert b.counts == {"completions_sampled": cfg.batch_size}


def test_step_rollout_places_each_verdict_on_its_last_token():
    """Verdicts land on the token holding the step's last character; one at the end of the text on the completion's
    last token (EOS included); two on one token count once, the lower; the columns reach steps_fn per completion."""
    policy, tok = load_policy()
    seen = []

    def steps_fn(text, idx):
        seen.append(idx)
        return [(1, 1.0), (len(text), 0.5), (len(text), 1.0)] if text else []
    cfg = GRPOConfig(**CFG)
    draw = StepRollout(columns={"idx": [0, 1, 2, 3]}, steps_fn=steps_fn, outcome_weight=0.5).start(
        policy, tok, PROMPTS, ANSWERS, half_right, cfg)
    b = draw(0)
    assert b.steps.outcome_weight == 0.5 and len(seen) == cfg.batch_size and seen == [seen[j - j % 4] for j in range(8)]
    for i, text in enumerate(b.ro.texts):
        n = int(b.ro.completion_mask[i].sum())
        at = b.steps.mask[i].nonzero().flatten().tolist()
        if not text:
            assert at == []
            continue
        # the token holding character 1 (the first token that decodes to something), unless the text ends there
        first = next(t for t in range(n) if len(tok.decode(b.ro.completion_ids[i, :t + 1], skip_special_tokens=True)))
        assert at == sorted({first if len(text) > 1 else n - 1, n - 1}), (text, at)
        assert b.steps.rewards[i, n - 1] == 0.5 and (len(text) == 1 or b.steps.rewards[i, first] == 1.0)


def test_step_rollout_bad_input_is_named():
    policy, tok = load_policy()
    cfg = GRPOConfig(**CFG)
    with pytest.raises(ValueError, match="steps_fn"):
        StepRollout().start(policy, tok, PROMPTS, ANSWERS, half_right, cfg)
    with pytest.raises(ValueError, match="outcome_weight"):
        StepRollout(steps_fn=lambda t: [], outcome_weight=-1).start(policy, tok, PROMPTS, ANSWERS, half_right, cfg)
    with pytest.raises(ValueError, match="dynamic_sampling"):
        StepRollout(steps_fn=lambda t: []).start(policy, tok, PROMPTS, ANSWERS, half_right,
                                                 GRPOConfig(**dict(CFG, dynamic_sampling=True)))
    for bad, what in ((lambda t: None, "list of"), (lambda t: [(len(t) + 1, 1.0)], "end <="),
                      (lambda t: [(0, "yes")], "verdict"), (lambda t: [(True, 1.0)], "pairs")):
        draw = StepRollout(steps_fn=bad).start(policy, tok, PROMPTS, ANSWERS, half_right, cfg)
        with pytest.raises(ValueError, match=what):
            draw(0)


def test_token_verdicts_refuse_a_tokenizer_that_does_not_spell_the_text():
    policy, tok = load_policy()
    b = GroupRollout().start(policy, tok, PROMPTS, ANSWERS, half_right, GRPOConfig(**CFG))(0)
    ro = dataclasses.replace(b.ro, texts=[t + "!" for t in b.ro.texts])
    with pytest.raises(ValueError, match="do not spell"):
        token_verdicts(lambda t: [], ro, tok, [{}] * len(ro.texts))


def test_step_rollout_with_agreeing_verdicts_trains_as_the_outcome_alone():
    """Verdicts that all agree carry no advantage: with outcome_weight 1 the run is GroupRollout's to the bit, with
    outcome_weight 0 nothing moves (every advantage is 0)."""
    same = lambda text: [(len(text), 1.0)]  # noqa: E731
    d_group, h_group = moved(GroupRollout())
    d_one, h_one = moved(StepRollout(steps_fn=same, outcome_weight=1.0))
    d_zero, _ = moved(StepRollout(steps_fn=same, outcome_weight=0.0))
    assert d_one == d_group > 0 and [h["loss"] for h in h_one] == [h["loss"] for h in h_group]
    assert d_zero == 0.0


def test_pruned_rollout_keeps_each_prompts_best_group_size():
    """factor x G completions a prompt drawn and rewarded, the G best kept (ties: the first drawn), in draw order;
    every completion drawn is counted."""
    policy, tok = load_policy()
    seen = {}

    def reward(completions, answer, **kw):  # 1.0 for rows 0, 3 and 6 of each group of 8, 0.5 for row 1
        seen["texts"] = list(completions)
        return [1.0 if i % 8 in (0, 3, 6) else 0.5 if i % 8 == 1 else 0.0 for i in range(len(completions))]
    cfg = GRPOConfig(**CFG)  # batch 8, G 4: 2 prompts
    b = PrunedRollout(factor=2).start(policy, tok, PROMPTS, ANSWERS, reward, cfg)(0)
    assert b.ro.completion_ids.shape[0] == 8 and b.counts == {"completions_sampled": 16}
    assert b.rewards.tolist() == [1.0, 0.5, 1.0, 1.0] * 2
    assert b.ro.texts == [seen["texts"][g * 8 + i] for g in range(2) for i in (0, 1, 3, 6)]
    with pytest.raises(ValueError, match="factor"):
        PrunedRollout(factor=0).start(policy, tok, PROMPTS, ANSWERS, reward, cfg)
    with pytest.raises(ValueError, match="dynamic_sampling"):
        PrunedRollout().start(policy, tok, PROMPTS, ANSWERS, reward, GRPOConfig(**dict(CFG, dynamic_sampling=True)))

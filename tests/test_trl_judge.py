"""Lab 11's bridge, run through TRL's own reward step (GRPOTrainer._calculate_rewards): a learned judge passed as one
of reward_funcs (an nn.Module, with its tokenizer in reward_processing_classes) is scored as our judge scores it,
TRL reading the raw logit whose sigmoid is our P(right); our hybrid is two reward functions, each None on the
other's rows, which TRL keeps as NaN (left out of the weighted sum); an async reward function (an API judge) gives
what the same function gives called directly; reward_weights reach the trainer."""
import asyncio
import copy
import math

import datasets
import pytest
import torch
from tolerance import assert_near

from utils.models.judge import JudgeConfig, judge_probs, make_judge
from utils.rl.grpo import GRPOConfig
from utils.rl.trl_trainer import to_trl_config
from utils.verifiers.arithmetic import strict_reward


def test_trl_scores_our_judge_a_hybrid_and_an_async_judge(shipped, tmp_path):
    import trl

    model, tok = shipped
    judge = make_judge(tok, JudgeConfig(n_layer=1, n_embd=16, n_head=2, seed=3)).eval()
    prompts, completions = ["12+34=", "12+34=", "5+6=", "5+6="], ["46", "45", "11", "1"]
    answers, checkable = ["46", "46", "11", "11"], [True, True, False, False]

    def rule_where_it_applies(completions, answer, checkable, **kw):
        return [s if c else None for s, c in zip(strict_reward(completions, answer), checkable)]

    async def api_judge(prompts, completions, **kw):      # an API judge: awaited by TRL beside the others
        await asyncio.sleep(0)
        return judge_probs(judge, tok, prompts, completions)

    ds = datasets.Dataset.from_dict({"prompt": prompts, "answer": answers, "checkable": checkable})
    args = to_trl_config(GRPOConfig(steps=1, batch_size=4, group_size=2), str(tmp_path))
    args.reward_weights = [1.0, 2.0, 0.5]
    trainer = trl.GRPOTrainer(model=copy.deepcopy(model), reward_funcs=[judge, rule_where_it_applies, api_judge],
                              args=args, train_dataset=ds, processing_class=tok, reward_processing_classes=[tok, None,
                                                                                                              None])
    inputs = [{"prompt": p, "answer": a, "checkable": c} for p, a, c in zip(prompts, answers, checkable)]
    got = trainer._calculate_rewards(inputs, prompts, completions, [tok(c)["input_ids"] for c in completions])
    ours = judge_probs(judge, tok, prompts, completions)
    assert_near(torch.sigmoid(got[:, 0]), ours, "TRL's judge scores against ours")   # TRL: the logit; ours: P(right)
    assert got[:2, 1].tolist() == [1.0, 0.0] and all(math.isnan(v) for v in got[2:, 1].tolist())
    assert got[:, 2].tolist() == pytest.approx(ours, abs=1e-5)
    assert trainer.reward_weights.tolist() == [1.0, 2.0, 0.5]

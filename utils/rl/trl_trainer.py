"""The same GRPO run through TRL's GRPOTrainer: same task, model, verifier and hyper-parameters.

Our GRPOConfig maps onto trl.GRPOConfig field by field (see to_trl_config), and the history
comes back in the same format as utils.rl.loop.train_grpo's, so both runs share one plot.
"""
import os
import tempfile
import time

from utils.eval.metrics import eval_sets_of, heldout_keys, heldout_metrics
from utils.rl.grpo import GRPOConfig

# TRL's logged names -> ours
TRL_KEYS = {
    "reward": "reward_mean", "reward_std": "reward_std", "frac_reward_zero_std": "zero_spread_frac",
    "entropy": "entropy", "kl": "kl", "clip_ratio/region_mean": "clip_frac",
    "completions/mean_length": "completion_len", "loss": "loss",
}


def to_trl_config(cfg: GRPOConfig, output_dir):
    """A trl.GRPOConfig with the same hyper-parameters as our config, for the CPU."""
    import trl

    cfg.validate()
    return trl.GRPOConfig(
        output_dir=output_dir, max_steps=cfg.steps * cfg.updates_per_batch,  # TRL counts optimizer steps
        per_device_train_batch_size=cfg.batch_size, num_generations=cfg.group_size, learning_rate=cfg.lr,
        lr_scheduler_type="constant_with_warmup", warmup_steps=cfg.warmup_steps,
        weight_decay=0.0, max_grad_norm=cfg.max_grad_norm, temperature=cfg.temperature,
        max_completion_length=cfg.max_new_tokens, epsilon=cfg.eps_low, epsilon_high=cfg.eps_high,
        beta=cfg.beta, loss_type=cfg.loss_type, num_iterations=cfg.updates_per_batch,
        scale_rewards="group" if cfg.scale_std else "none", seed=cfg.seed, data_seed=cfg.seed,
        use_cpu=True, bf16=False, fp16=False, report_to="none", logging_steps=1, save_strategy="no",
        disable_dropout=True, disable_tqdm=True,
    )


def train_with_trl(policy, tokenizer, train_dataset, reward_fn, cfg: GRPOConfig, eval_prompts=None,
                   eval_answers=None, progress=True, eval_rewards=None, eval_sets=None):
    """Train `policy` in place with trl.GRPOTrainer. train_dataset needs columns prompt and answer.

    Returns (history, trainer): history is a list of dicts with the same keys as train_grpo's, the
    held-out numbers from the same heldout_metrics (every cfg.eval_every steps and at the end).
    """
    import trl
    from tqdm.auto import tqdm
    from transformers import PrinterCallback, ProgressCallback, TrainerCallback

    cfg.validate()
    if cfg.baseline != "mean":
        raise ValueError("TRL's GRPOTrainer only has the mean baseline; set GRPOConfig.baseline='mean'")
    eval_sets = eval_sets_of(eval_prompts, eval_answers, eval_sets)
    history = []
    t0 = [None]

    class Recorder(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            t0[0] = time.time()
            self.bar = tqdm(total=state.max_steps, desc="TRL GRPO", disable=not progress,
                            mininterval=1.0)  # few widget messages, see loop.py

        def on_log(self, args, state, control, logs=None, **kw):
            if not logs or "reward" not in logs:
                return
            rec = {"step": state.global_step, **{ours: logs.get(theirs) for theirs, ours in TRL_KEYS.items()},
                   **heldout_keys(eval_sets, eval_rewards)}
            last = state.global_step == state.max_steps
            if last or (cfg.eval_every and state.global_step % cfg.eval_every == 0):
                model = kw["model"]
                was = model.training
                rec.update(heldout_metrics(model, tokenizer, eval_sets, eval_rewards, cfg.eval_n,
                                           cfg.temperature, cfg.max_new_tokens))
                model.train(was)
            rec["seconds"] = time.time() - t0[0]
            history.append(rec)
            self.bar.update(1)
            self.bar.set_postfix(reward=f"{rec['reward_mean']:.2f}", refresh=False)

        def on_train_end(self, args, state, control, **kw):
            self.bar.close()

    def reward(completions, answer, **kw):  # TRL names the function in its logs
        return reward_fn(completions, answer, **kw)
    reward.__name__ = getattr(reward_fn, "__name__", "reward")

    with tempfile.TemporaryDirectory() as out:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        trainer = trl.GRPOTrainer(model=policy, reward_funcs=reward, args=to_trl_config(cfg, out),
                                  train_dataset=train_dataset, processing_class=tokenizer,
                                  callbacks=[Recorder()])
        for cb in (PrinterCallback, ProgressCallback):  # our Recorder shows one progress bar instead
            trainer.remove_callback(cb)
        trainer.train()
    policy.eval()
    return history, trainer

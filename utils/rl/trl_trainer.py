"""The same GRPO run through TRL's GRPOTrainer: same task, model, verifier and hyper-parameters.

Our GRPOConfig maps onto trl.GRPOConfig field by field (see to_trl_config), and the history comes
back under train_grpo's names (TRL_KEYS), so both runs share one plot.

TRL 1.16's loss options, each set explicitly so that TRL optimises utils.rl.grpo.policy_loss (TRL's
default in brackets; tests/test_trl_loss.py runs TRL's own _compute_loss against ours):
  loss_type = ours [dapo]: grpo, dapo, dr_grpo have our normalisations (dapo: tokens of the generation
      batch, = this batch with one process and gradient_accumulation_steps = 1; dr_grpo: N * max_new_tokens);
      bnpo, cispo, sapo, vespo (the loss zoo) our per_token_loss's objectives, each checked against TRL's
  epsilon, epsilon_high = eps_low, eps_high [0.2, None = epsilon], but epsilon_high = cispo_cap under cispo,
      where TRL reads it as CISPO's cap; sapo_temperature_*, vespo_* = ours [TRL's defaults, also ours];
      delta = ours [None]: the two-sided clip, off unless set (INTELLECT-2)
  importance_sampling_level = ratio_level [token]: a ratio per token, or GSPO's one per sequence
  use_bias_correction_kl = False [True]: True multiplies the k3 KL by pi/pi_old,
      which changes the loss off-policy and the gradient always when beta > 0; ours is plain k3
  mask_truncated_completions = mask_truncated [False]; off_policy_mask_threshold = None [None] (ours is
      StaleRollout's, on the sampler it runs: TRL's reads vLLM's log-probs)
  top_entropy_quantile = top_entropy_frac [1.0]; entropy_coef = entropy_coef [0.0]; use_adaptive_entropy
      = False [False]; use_vllm = False [False], so the vLLM importance-sampling correction [True] is off
  scale_rewards = "group" or "none" [group]; multi_objective_aggregation = "sum_then_normalize" [same];
      sync_ref_model = False [False]; top_p, top_k, min_p, repetition_penalty = 1, 0, None, 1 [same]
Differences no option removes (measured in tests/test_trl_loss.py):
  - TRL divides advantages by the unbiased group std (G - 1), ours by the population std (G): with
    scale_std, TRL's advantages are ours * sqrt((G - 1) / G) (0.866 for G = 4), up to the 1e-4.
  - top_entropy_frac < 1: TRL zeroes the other tokens' policy loss but still divides by all completion
    tokens and applies the KL on all of them; ours averages loss and KL over the kept tokens only (dapo,
    beta = 0: TRL's loss = ours * kept / all tokens). The entropy bonus: TRL's over the kept, ours over all.
Removed here, not by an option: TRL scores completions with model(input_ids, attention_mask) and no
position ids, so GPT-2 (absolute positions) would see a left-padded prompt's tokens at shifted positions in
the update, while generate() and our loop number positions from the attention mask (measured before the fix:
1.5 nats per token apart on the padded rows of 64 training prompts, up to 10.6). train_with_trl therefore
gives the trainer's models positions from the mask for the run (positions_from_mask).
"""
import math
import os
import tempfile
import time

from utils import checks
from utils.eval.metrics import eval_sets_of, heldout_keys, heldout_metrics
from utils.models.policy import fits
from utils.rl.grpo import GRPOConfig

# TRL's logged names -> ours
TRL_KEYS = {
    "reward": "reward_mean", "reward_std": "reward_std", "frac_reward_zero_std": "zero_spread_frac",
    "entropy": "entropy", "kl": "kl", "clip_ratio/region_mean": "clip_frac",
    "completions/mean_length": "completion_len", "completions/clipped_ratio": "truncated_frac", "loss": "loss",
    "grad_norm": "grad_norm",
}


def _steps(cfg):
    """Optimizer steps for TRL: our steps (or fewer under a completions budget) times the updates per batch."""
    steps = min(cfg.steps, -(-cfg.max_completions // cfg.batch_size)) if cfg.max_completions else cfg.steps
    return steps * cfg.updates_per_batch


# The knob map (Lab 08): each concept of the course, our GRPOConfig field (or train_grpo argument), the
# trl.GRPOConfig field that implements it (None: TRL has none), the lab that teaches it, and how our value
# becomes TRL's. to_trl_config is built from this table, so the table Lab 08 shows is the mapping in use.
KNOBS = [
    # concept, ours, trl, lab, our value -> TRL's, note
    ("group size G", "group_size", "num_generations", "01", lambda c: c.group_size, ""),
    ("completions per step", "batch_size", "per_device_train_batch_size", "01",
     lambda c: c.batch_size // world_size(), "TRL's is per process: ours / processes (x gradient_accumulation_steps)"),
    ("training steps", "steps", "max_steps", "01", _steps, "TRL counts optimizer steps: steps x updates_per_batch"),
    ("compute budget in completions", "max_completions", "max_steps", "07", _steps,
     "TRL has no completion budget: it becomes a step count"),
    ("learning rate", "lr", "learning_rate", "01", lambda c: c.lr, "constant after warm-up, as ours"),
    ("warm-up steps", "warmup_steps", "warmup_steps", "01", lambda c: c.warmup_steps, ""),
    ("sampling temperature", "temperature", "temperature", "01", lambda c: c.temperature, ""),
    ("completion cap", "max_new_tokens", "max_completion_length", "06", lambda c: c.max_new_tokens, ""),
    ("clip range (low)", "eps_low", "epsilon", "01", lambda c: c.eps_low, ""),
    ("clip-higher", "eps_high", "epsilon_high", "04", lambda c: c.cispo_cap if c.loss_type == "cispo" else c.eps_high,
     "DAPO, arXiv 2503.14476; under loss_type='cispo' TRL reads this field as CISPO's cap (next row)"),
    ("KL penalty", "beta", "beta", "01", lambda c: c.beta, "TRL logs the KL only when beta > 0"),
    ("two-sided clip", "delta", "delta", "10", lambda c: c.delta,
     "INTELLECT-2, arXiv 2505.07291: where A < 0 the unclipped ratio is capped at delta (> 1 + eps_high); "
     "the clipped losses only"),
    ("loss aggregation", "loss_type", "loss_type", "06", lambda c: c.loss_type,
     "grpo, dapo, dr_grpo, luspo (arXiv 2602.05261: with one ratio per sequence), bnpo; cispo, sapo, vespo "
     "change the objective too (Lab 10)"),
    ("importance-ratio level", "ratio_level", "importance_sampling_level", "06",
     lambda c: c.ratio_level, "GSPO (arXiv 2507.18071): 'sequence'"),
    ("std scaling of advantages", "scale_std", "scale_rewards", "06",
     lambda c: "group" if c.scale_std else "none", "Dr. GRPO turns it off (arXiv 2503.20783)"),
    ("several updates per batch", "updates_per_batch", "num_iterations", "01", lambda c: c.updates_per_batch, ""),
    ("entropy bonus", "entropy_coef", "entropy_coef", "04", lambda c: c.entropy_coef, ""),
    ("train on high-entropy tokens", "top_entropy_frac", "top_entropy_quantile", "04",
     lambda c: c.top_entropy_frac, "arXiv 2506.01939; TRL still divides by all tokens"),
    ("truncation masking", "mask_truncated", "mask_truncated_completions", "06", lambda c: c.mask_truncated,
     "DAPO's overlong filtering"),
    ("gradient clipping", "max_grad_norm", "max_grad_norm", "01", lambda c: c.max_grad_norm, ""),
    ("seed", "seed", "seed", "01", lambda c: c.seed, "data_seed too"),
    ("dynamic sampling", "dynamic_sampling", None, "07", None,
     "no field: TRL trains every group; filter prompts by pass rate (Lab 07) instead"),
    ("baseline", "baseline", None, "03", None, "TRL has the group mean only"),
    ("curriculum", "GroupRollout(pools=)", None, "07", None, "no field: TRL shuffles; order the dataset yourself"),
    ("credit per step", "StepRollout(steps_fn=)", None, "06", None,
     "no field: TRL's reward functions give one number per completion (process supervision, arXiv 2402.03300)"),
    ("the reward functions", "reward_fn", "GRPOTrainer(reward_funcs=)", "02", None,
     "a trainer argument, same signature; several are summed with reward_weights"),
    ("LoRA adapter", "peft_config", "GRPOTrainer(peft_config=)", "08", None, "a trainer argument (peft)"),
    # the loss zoo's own parameters (Lab 10): TRL's defaults are ours
    ("CISPO's cap on the ratio", "cispo_cap", "epsilon_high", "10", None,
     "mapped by meaning: sent as epsilon_high when loss_type='cispo' (ScaleRL, arXiv 2510.13786, suggests 5.0); "
     "clip-higher's 0.28 there would scale every token's gradient by 0.28"),
    ("SAPO's gate temperature, A > 0", "sapo_tau_pos", "sapo_temperature_pos", "10", lambda c: c.sapo_tau_pos,
     "arXiv 2511.20347"),
    ("SAPO's gate temperature, A <= 0", "sapo_tau_neg", "sapo_temperature_neg", "10", lambda c: c.sapo_tau_neg, ""),
    ("VESPO's weight, A >= 0: k", "vespo_k_pos", "vespo_k_pos", "10", lambda c: c.vespo_k_pos, ""),
    ("VESPO's weight, A >= 0: lambda", "vespo_lambda_pos", "vespo_lambda_pos", "10", lambda c: c.vespo_lambda_pos, ""),
    ("VESPO's weight, A < 0: k", "vespo_k_neg", "vespo_k_neg", "10", lambda c: c.vespo_k_neg, ""),
    ("VESPO's weight, A < 0: lambda", "vespo_lambda_neg", "vespo_lambda_neg", "10", lambda c: c.vespo_lambda_neg, ""),
    # tools and environments (Lab 09; tests/test_trl_tools.py runs a scripted calculator episode through both)
    ("an environment per episode", "ToolRollout (a Calculator per batch)", "GRPOTrainer(environment_factory=)", "09",
     None, "a class TRL makes one of per generation: reset(**row) each episode, its public methods the tools "
     "(described to the model from their docstrings); GRPOTrainer(tools=) takes plain functions instead"),
    ("how a call is written", "the calculator protocol ('?478+356=')", "chat template + response template", "09",
     None, "ours: characters the model learnt in pre-training; TRL: the chat template renders tool calls and the "
     "tokenizer's response template parses them (transformers >= 5.13)"),
    ("the environment's tokens carry no loss", "episode_tensors / ro.loss_mask", "tool_mask (the trainer's)", "09",
     None, "TRL trains on completion_mask x tool_mask: the same tokens as ours on a scripted episode, with a BPE "
     "tokenizer too (it appends a tool's reply as ids and never re-encodes the transcript)"),
    ("the environment owns the reward", "reward_fn reading the episode's text", "environment's get_reward()", "09",
     None, "TRL adds get_reward as a reward function named after the class; it reads the environment's state, "
     "not the text, so a cut episode whose sum was done is paid there and not by our outcome check"),
    ("a cap on tool calls", "ToolRollout(max_calls=)", "max_tool_calling_iterations", "09",
     None, "TRL counts turns (ours has one call a turn); at the cap TRL stops at the unanswered call "
     "with no EOS (a truncated completion), ours appends the calculator's EOS and marks the row cut; "
     "TRL's health numbers: tools/call_frequency, tools/failure_frequency"),
    # beyond rule verifiers (Lab 11): trainer arguments, not config fields, but for reward_weights
    ("a learned judge as the reward", "judge_scorer(judge, tok)", "GRPOTrainer(reward_funcs=a model)", "11", None,
     "a model id or an AutoModelForSequenceClassification with num_labels=1, its tokenizer in "
     "reward_processing_classes: TRL reads its raw logit (ours: P(right), the sigmoid) on prompt + completion, "
     "right-padded by that tokenizer; it has no cache, timeout or fallback, which a wrapper like JudgeClient adds"),
    ("several rewards, weighted", "ProgramChecker('layered')", "reward_weights", "11", None,
     "ours: the layers in one function; TRL: several reward_funcs are summed per completion with these weights "
     "before the group's advantage (multi_objective_aggregation='sum_then_normalize'; 'normalize_then_sum' scales "
     "each first)"),
    ("a rule where it applies, a judge elsewhere", "hybrid_reward(rule, judge)", "reward_funcs returning None", "11",
     None, "two functions, each None on the other's rows: TRL leaves a None out of that completion's weighted sum "
     "(nansum); a completion no function scores is left out of its group's baseline and gets no advantage"),
    ("a judge behind an API", "JudgeClient", "an async reward function", "11", None,
     "ours: a cache, a timeout, a circuit breaker and a fallback; TRL awaits async reward functions together on its "
     "own event loop (asyncio.gather), so slow calls overlap; caching, timeouts and fallbacks stay the function's "
     "job"),
    # off-policy sampling (Lab 10): rollout objects here; in TRL, a vLLM server's settings, so none on the CPU
    ("a sampler some steps behind", "StaleRollout(lag=)", "AsyncGRPOConfig(max_staleness=)", "10", None,
     "TRL's experimental async trainer (a vLLM server samples): a bound on the lag, older rollouts dropped; "
     "ours is a fixed lag. Needs a GPU and vLLM: not on the CPU"),
    ("the sampler's precision", "StaleRollout(sampler_dtype=)", None, "10", None,
     "vLLM's own dtype (its --dtype); with use_vllm=False TRL samples with the policy itself"),
    ("importance-sampling correction", "StaleRollout(correction=)", "vllm_importance_sampling_mode", "10", None,
     "applied only with use_vllm=True (its default is on, 'sequence_mask'); to_trl_config leaves vLLM off"),
    ("no correction, old log-probs recomputed", "StaleRollout(correction='recompute')",
     "vllm_importance_sampling_correction=False", "10", None,
     "the trainer's own log-probs at batch time are the clip's old policy and no weight is applied: the "
     "sampler's distance is ignored (ours with correction=None keeps the sampler's log-probs as old instead)"),
    ("off-policy sequence masking", "StaleRollout(off_policy_mask_threshold=)", "off_policy_mask_threshold", "10",
     None, "DeepSeek-V3.2, arXiv 2512.02556: a sequence with A < 0 whose mean log pi_sampler - log pi_policy exceeds "
     "the threshold leaves the loss; TRL recomputes it before each update, ours at batch time"),
    ("the correction's bounds", "StaleRollout(is_max=, is_min=)", "vllm_importance_sampling_clip_max", "10", None,
     "and vllm_importance_sampling_clip_min; TRL's default cap 3.0 is ours"),
]
KNOB_MAP = [dict(zip(("concept", "ours", "trl", "lab", "to_trl", "note"), k)) for k in KNOBS]

# Set the same way for every run: TRL's default in the comment where it differs (see the module docstring).
FIXED = dict(
    gradient_accumulation_steps=1,  # one batch per optimizer step, as ours (dapo's token count is this batch's)
    lr_scheduler_type="constant_with_warmup", weight_decay=0.0,
    top_p=1.0, top_k=0, min_p=None, repetition_penalty=1.0,  # plain temperature sampling, as ours
    use_bias_correction_kl=False,  # ours is plain k3 KL; TRL's default [True] weights it by pi/pi_old
    sync_ref_model=False, off_policy_mask_threshold=None, use_adaptive_entropy=False,
    use_vllm=False,  # so no vLLM importance-sampling correction either
    multi_objective_aggregation="sum_then_normalize",
    bf16=False, fp16=False, report_to="none", logging_steps=1, save_strategy="no",
    disable_dropout=True, disable_tqdm=True,
)


# the first trl whose LUSPO with a KL term (beta > 0) was checked to equal ours (tests/test_trl_loss.py); 1.8, the
# lowest requirements.txt allows, multiplies the per-token loss by the length and averages over every position,
# padding included, once the KL makes the loss per token
LUSPO_KL_MASKED = "1.16"


def _older(version, than):
    from packaging.version import Version

    return Version(version) < Version(than)


def knob_table():
    """The knob map as rows {concept, ours, trl, lab, note} (Lab 08 shows it as a table)."""
    return [{k: row[k] or "(none)" for k in ("concept", "ours", "trl", "lab", "note")} for row in KNOB_MAP]


def world_size():
    """How many processes train together: accelerate and torchrun set WORLD_SIZE in each (1 when unset)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def check_split(cfg, processes):
    """Raise a ValueError naming what to change when the global batch cannot be shared among the processes."""
    _check_cfg("check_split", cfg)
    processes = checks.number("check_split", "processes", processes, lo=1, hi=10_000, integer=True)
    if cfg.batch_size % processes:
        step = math.lcm(processes, cfg.group_size)   # the first batch size >= batch_size both divide
        ok = -(-cfg.batch_size // step) * step
        raise ValueError(f"GRPOConfig.batch_size={cfg.batch_size} completions cannot be shared among {processes} "
                         f"processes: make it a multiple of both the process count and group_size "
                         f"(e.g. batch_size={ok}), or launch with a process count that divides it")


def trl_kwargs(cfg: GRPOConfig):
    """{trl.GRPOConfig field: value} for our config, from KNOB_MAP (first row wins for a shared field)."""
    _check_cfg("trl_kwargs", cfg)
    out = {}
    for row in KNOB_MAP:
        if row["to_trl"] is not None:
            out.setdefault(row["trl"], row["to_trl"](cfg))
    return out


def _check_cfg(where, cfg):
    """cfg after checking that it is a GRPOConfig and still valid (a field may have been changed after it was built)."""
    if not isinstance(cfg, GRPOConfig):
        raise ValueError(f"{where}: cfg must be a GRPOConfig, got {checks._short(cfg)}")
    cfg.validate()
    return cfg


def _check_dataset(where, name, ds, policy, tokenizer, max_new_tokens):
    """ds after checking that it is a datasets.Dataset with the columns prompt and answer, at least one row, and
    text prompts that fit the model's positions with max_new_tokens more (ValueError naming `name` otherwise)."""
    cols = getattr(ds, "column_names", None)
    if not isinstance(cols, list) or not hasattr(ds, "select"):
        raise ValueError(f"{where}: {name} must be a datasets.Dataset with columns prompt and answer (e.g. "
                         f"utils.tasks.arithmetic.load_split('train')), got {checks._short(ds)}")
    missing = [c for c in ("prompt", "answer") if c not in cols]
    if missing:
        raise ValueError(f"{where}: {name} lacks the column(s) {missing}: it needs prompt and answer (has {cols})")
    if len(ds) == 0:
        raise ValueError(f"{where}: {name} is empty: it needs at least one row")
    prompts = ds["prompt"]
    if all(isinstance(p, str) for p in prompts):  # not a conversational dataset (TRL takes lists of messages too)
        fits(where, f"{name}['prompt']", policy, tokenizer, checks.strings(where, f"{name}['prompt']", prompts),
             max_new_tokens)
    return ds


def to_trl_config(cfg: GRPOConfig, output_dir, use_cpu=True, bf16=False):
    """A trl.GRPOConfig with the same hyper-parameters and loss as our config: the mapped fields of KNOB_MAP
    plus FIXED (see the module docstring for each loss option and TRL's default). cfg.batch_size is the
    global batch: with several processes (under accelerate or torchrun) each samples batch_size / world_size
    completions and the gradients are averaged, so one step is the same step whatever the number of processes.
    bf16=True trains in bfloat16 mixed precision (a GPU that has it; see settings_for)."""
    import trl

    _check_cfg("to_trl_config", cfg)
    if not isinstance(output_dir, (str, os.PathLike)) or not str(output_dir):
        raise ValueError(f"to_trl_config: output_dir must be a folder's path (a non-empty str), got "
                         f"{checks._short(output_dir)}")
    for name, flag in (("use_cpu", use_cpu), ("bf16", bf16)):
        if not isinstance(flag, bool):
            raise ValueError(f"to_trl_config: {name} must be True or False, got {checks._short(flag)}")
    check_split(cfg, world_size())
    if cfg.dynamic_sampling:
        raise ValueError("GRPOConfig.dynamic_sampling=True has no trl.GRPOConfig field (TRL trains every group it "
                         "samples); set it to False for train_with_trl, or filter the dataset to prompts the model "
                         "solves sometimes")
    if cfg.baseline != "mean":
        raise ValueError(f"GRPOConfig.baseline={cfg.baseline!r} has no trl.GRPOConfig field (TRL's GRPOTrainer only "
                         f"has the group mean); set GRPOConfig.baseline='mean' for train_with_trl")
    if cfg.loss_type == "luspo" and cfg.beta > 0 and _older(trl.__version__, LUSPO_KL_MASKED):
        raise ValueError(f"GRPOConfig.loss_type='luspo' with beta={cfg.beta} is another objective in trl "
                         f"{trl.__version__}: its LUSPO sums the KL over the padding too (tests/test_trl_loss.py; "
                         f"checked equal to ours from trl {LUSPO_KL_MASKED}). Set beta=0, or install trl>="
                         f"{LUSPO_KL_MASKED}")
    if bf16:
        import torch

        if use_cpu or not (torch.cuda.is_available() and torch.cuda.is_bf16_supported()):
            raise ValueError("bf16=True needs a GPU with bfloat16 (an A100, L4 or H100; not a T4) and use_cpu=False; "
                             "settings_for(tokenizer, device) picks the precision for the machine you are on")
    return trl.GRPOConfig(output_dir=output_dir, **trl_kwargs(cfg), data_seed=cfg.seed, use_cpu=use_cpu,
                          **FIXED | {"bf16": bool(bf16)})


# Lab 08's run, per kind of model. The toy answers in a few digits; a chat model writes a sentence and then an
# 'Answer: N' line (utils.verifiers.chat.chat_reward), and a pre-trained model takes a small learning rate.
TOY_RUN = dict(steps=30, batch_size=64, group_size=8, lr=2e-3, max_new_tokens=8)
CHAT_RUN = dict(steps=30, batch_size=32, group_size=8, lr=5e-6, max_new_tokens=128)
# measured (benchmarks/results/lab08_memory.json, 2 CPU threads): SmolLM2-135M LoRA, 32 completions x 64 tokens
CPU_SECONDS_PER_STEP_SMOL = 54


def settings_for(tokenizer, device="cpu"):
    """(GRPOConfig fields, bf16, note) for Lab 08's LoRA run of the model behind `tokenizer`: TOY_RUN for a model
    without a chat template (the shipped one), CHAT_RUN for a chat model (a 128-token cap: room for a sentence and
    the answer line; lr 5e-6, the value Unsloth's GRPO notebooks use with LoRA, not tuned here: no hub model can
    be trained offline). bf16 only on a GPU that has it (A100, L4, H100; a T4 has not: fp32 there); fp32 on a
    CPU. note says what to expect."""
    import torch

    from utils.tasks.chat import has_chat_template

    checks.tokenizer("settings_for", "tokenizer", tokenizer)
    try:
        if not isinstance(device, (str, torch.device)):
            raise TypeError
        torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"settings_for: device must be 'cpu' or 'cuda' (a str or torch.device), got "
                         f"{checks._short(device)}") from None
    if not has_chat_template(tokenizer):
        return dict(TOY_RUN), False, "the shipped model: seconds a step on a CPU"
    gpu = str(device).startswith("cuda") and torch.cuda.is_available()
    bf16 = gpu and torch.cuda.is_bf16_supported()
    if gpu:
        return dict(CHAT_RUN), bf16, f"a chat model on {torch.cuda.get_device_name()}, {'bf16' if bf16 else 'fp32'}"
    minutes = CPU_SECONDS_PER_STEP_SMOL * CHAT_RUN["steps"] * CHAT_RUN["max_new_tokens"] / 64 / 60
    return dict(CHAT_RUN), False, (f"a chat model on a CPU: about {minutes:.0f} minutes or more at SmolLM2-135M's "
                                   f"measured {CPU_SECONDS_PER_STEP_SMOL} s a step for 32 x 64 tokens; use a GPU")


def warn_if_too_big(policy, tokenizer, train_dataset, cfg, peft_config, grad_checkpointing, use_cpu):
    """utils.models.memory's estimate of one step on this process, before TRL builds anything: a CourseWarning
    with the estimate and what to change when it exceeds the free memory (check_fits). Architectures the
    estimate does not model are not checked. Returns the estimate, or None."""
    import torch

    from utils.models.memory import check_fits, estimate_memory

    prompts = list(train_dataset["prompt"][:256])
    prompt_len = max(len(ids) for ids in tokenizer(prompts)["input_ids"])
    device = "cpu" if use_cpu or not torch.cuda.is_available() else "cuda"
    try:
        est = estimate_memory(policy, cfg.batch_size // world_size(), prompt_len, cfg.max_new_tokens,
                              lora_rank=getattr(peft_config, "r", 0) if peft_config is not None else 0,
                              grad_checkpointing=bool(grad_checkpointing), logits="fused", device=device)
    except ValueError:   # a model type the estimate does not model
        return None
    check_fits(est, device=device)
    return est


def positions_from_mask(model):
    """Make a forward call without position ids use positions from the attention mask (0 at the first real
    token, as utils.models.policy does), by wrapping the backbone's forward. Returns a function that undoes
    it. Needed because TRL's scoring forward passes no position ids (see the module docstring)."""
    from utils.models.policy import position_ids_from_mask

    backbone = model.base_model
    forward = backbone.forward

    def forward_with_positions(*args, attention_mask=None, position_ids=None, **kw):
        if position_ids is None and attention_mask is not None and attention_mask.dim() == 2:
            position_ids = position_ids_from_mask(attention_mask)
        return forward(*args, attention_mask=attention_mask, position_ids=position_ids, **kw)

    backbone.forward = forward_with_positions
    return lambda: vars(backbone).pop("forward", None)


def train_with_trl(policy, tokenizer, train_dataset, reward_fn, cfg: GRPOConfig, eval_prompts=None,
                   eval_answers=None, progress=True, eval_rewards=None, eval_sets=None, correct_fn=None,
                   peft_config=None, use_cpu=True, bf16=False):
    """Train `policy` in place with trl.GRPOTrainer. train_dataset needs columns prompt and answer; TRL
    passes its other columns to reward_fn as keyword arguments. correct_fn judges the held-out pass@1
    (default: the strict arithmetic verifier), as in train_grpo. peft_config (a peft.LoraConfig) trains a
    LoRA adapter instead of every weight: TRL wraps the policy in place and its reference is the policy with
    the adapter switched off, so no second copy is kept (Lab 08). use_cpu=False lets TRL use a GPU; bf16=True
    trains in bfloat16 there (settings_for says when). progress: True, False or the progress bar's label (default
    "TRL GRPO on <reward's name>").

    Returns (history, trainer): history has one dict per optimizer step (TRL's global_step: steps x
    updates_per_batch) holding TRL's logged numbers under train_grpo's names (TRL_KEYS, grad_norm included),
    seconds, and the held-out numbers of the same heldout_metrics (every cfg.eval_every steps and at the end).
    It lacks what TRL does not log: group_reward_std, distinct_answers, completion_len_right/_wrong,
    completions_sampled, train_seconds (so health_check, which reads group_reward_std, takes train_grpo's
    histories; summarize and diagnose take both). The reward's output is checked as in train_grpo.
    """
    import trl
    from tqdm.auto import tqdm
    from transformers import PrinterCallback, ProgressCallback, TrainerCallback

    where = "train_with_trl"
    _check_cfg(where, cfg)
    checks.model(where, "policy", policy)
    checks.tokenizer(where, "tokenizer", tokenizer)
    checks.function(where, "reward_fn", reward_fn)
    checks.function(where, "correct_fn", correct_fn, none=True)
    checks.function_dict(where, "eval_rewards", eval_rewards)
    if peft_config is not None and not all(hasattr(peft_config, a) for a in ("peft_type", "task_type")):
        raise ValueError(f"{where}: peft_config must be a peft config (e.g. peft.LoraConfig(...)) or None, got "
                         f"{checks._short(peft_config)}")
    _check_dataset(where, "train_dataset", train_dataset, policy, tokenizer, cfg.max_new_tokens)
    eval_sets = eval_sets_of(eval_prompts, eval_answers, eval_sets)
    for name, (ps, _) in eval_sets.items():  # a held-out set that cannot be sampled fails now, as in train_grpo
        fits(where, "eval_prompts" if name == "heldout" else f"eval_sets[{name!r}] prompts", policy, tokenizer,
             list(ps)[:cfg.eval_n], cfg.max_new_tokens)
    history = []
    t0 = [None]

    class Recorder(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            t0[0] = time.time()
            label = progress if isinstance(progress, str) else f"TRL GRPO on {reward.__name__}"
            self.bar = tqdm(total=state.max_steps, desc=label, mininterval=1.0,  # rank 0
                            disable=not progress or not state.is_world_process_zero)  # few widget messages, see loop.py

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
                                           cfg.temperature, cfg.max_new_tokens, correct_fn))
                model.train(was)
            rec["seconds"] = time.time() - t0[0]
            history.append(rec)
            self.bar.update(1)
            self.bar.set_postfix(reward=f"{rec['reward_mean']:.2f}", refresh=False)

        def on_train_end(self, args, state, control, **kw):
            self.bar.close()

    def reward(completions, answer, **kw):  # TRL names the function in its logs
        return checks.reward_scores(reward_fn, "reward_fn", completions, answer, kw)
    reward.__name__ = getattr(reward_fn, "__name__", "reward")

    with tempfile.TemporaryDirectory() as out:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        args = to_trl_config(cfg, out, use_cpu, bf16)
        warn_if_too_big(policy, tokenizer, train_dataset, cfg, peft_config, args.gradient_checkpointing, use_cpu)
        trainer = trl.GRPOTrainer(model=policy, reward_funcs=reward, args=args,
                                  train_dataset=train_dataset, processing_class=tokenizer,
                                  callbacks=[Recorder()], peft_config=peft_config)
        for cb in (PrinterCallback, ProgressCallback):  # our Recorder shows one progress bar instead
            trainer.remove_callback(cb)
        models = {id(m): m for m in (trainer.model, getattr(trainer, "ref_model", None)) if m is not None}
        undo = [positions_from_mask(m) for m in models.values()]
        try:
            trainer.train()
        finally:
            for u in undo:
                u()
    policy.eval()
    return history, trainer

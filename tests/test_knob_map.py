"""The knob map (utils.rl.trl_trainer.KNOB_MAP): every concept's trl.GRPOConfig field exists in the installed TRL,
and every lab's config (the GRPOConfig(...) calls in solutions/, plus one config per knob set away from its
default) builds a trl.GRPOConfig through the map with each mapped field carrying our value."""
import ast
import dataclasses
import glob
import json

import pytest

from utils.rl.grpo import GRPOConfig
from utils.rl.trl_trainer import FIXED, KNOB_MAP, knob_table, to_trl_config, trl_kwargs


def lab_configs():
    """{'NN: first words': GRPOConfig} from the literal keyword arguments of each GRPOConfig(...) call in the
    solutions (a keyword whose value is not a literal, such as group_size=G, keeps its default)."""
    out = {}
    for path in sorted(glob.glob("solutions/*.ipynb")):
        lab = path.split("/")[-1][:2]
        for cell in json.load(open(path))["cells"]:
            if cell["cell_type"] != "code":
                continue
            src = "".join(cell["source"])
            try:
                lines = [line for line in src.splitlines() if not line.lstrip().startswith(("%", "!"))]
                tree = ast.parse("\n".join(lines))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "GRPOConfig":
                    kw = {}
                    for k in node.keywords:
                        try:
                            kw[k.arg] = ast.literal_eval(k.value)
                        except ValueError:
                            pass
                    out[f"{lab}: {len(out)}"] = GRPOConfig(**{k: v for k, v in kw.items() if k})
    return out


def knob_configs():
    """One config per mapped knob, set away from its default."""
    away = dict(group_size=4, batch_size=48, steps=7, max_completions=100, lr=3e-4, warmup_steps=2, temperature=0.7,
                max_new_tokens=12, eps_low=0.1, eps_high=0.28, beta=0.04, loss_type="dr_grpo", scale_std=False,
                updates_per_batch=2, entropy_coef=0.01, top_entropy_frac=0.2, mask_truncated=True,
                max_grad_norm=0.5, seed=3, cispo_cap=4.0, sapo_tau_pos=0.7, sapo_tau_neg=1.3, vespo_k_pos=1.5,
                vespo_lambda_pos=2.5, vespo_k_neg=3.5, vespo_lambda_neg=1.5)
    return {f"knob {k}": GRPOConfig(**{k: v, **({"batch_size": 32} if k == "group_size" else {})})
            for k, v in away.items()}


def test_every_trl_field_exists():
    import trl
    fields = {f.name for f in dataclasses.fields(trl.GRPOConfig)}
    missing = [r["trl"] for r in KNOB_MAP if r["to_trl"] is not None and r["trl"] not in fields]
    missing += [k for k in FIXED if k not in fields]
    assert not missing, f"trl {trl.__version__} has no field(s) {missing}: update utils/rl/trl_trainer.KNOB_MAP"


def test_every_lab_config_maps(tmp_path):
    configs = {**lab_configs(), **knob_configs()}
    assert {name[:2] for name in configs} >= {"01", "02", "03", "04", "05", "06", "07"}, configs.keys()
    for name, cfg in configs.items():
        if cfg.dynamic_sampling or cfg.baseline != "mean":   # no TRL field: refused by name, never dropped
            with pytest.raises(ValueError, match="has no trl.GRPOConfig field"):
                to_trl_config(cfg, str(tmp_path))
            continue
        t = to_trl_config(cfg, str(tmp_path))
        for field, value in trl_kwargs(cfg).items():
            assert getattr(t, field) == value, (name, field)


def test_cispo_cap_is_mapped_by_meaning(tmp_path):
    """TRL reads epsilon_high as CISPO's cap under loss_type='cispo': ours sends cispo_cap there, not clip-higher
    (0.28 there would scale every token's gradient by 0.28), and clip-higher everywhere else."""
    t = to_trl_config(GRPOConfig(loss_type="cispo", eps_high=0.28, cispo_cap=4.0), str(tmp_path))
    assert (t.loss_type, t.epsilon_high) == ("cispo", 4.0)
    t = to_trl_config(GRPOConfig(loss_type="dapo", eps_high=0.28, cispo_cap=4.0), str(tmp_path))
    assert t.epsilon_high == 0.28


def test_knob_values_by_hand(tmp_path):
    t = to_trl_config(GRPOConfig(steps=5, batch_size=24, group_size=6, updates_per_batch=2, scale_std=False,
                                 mask_truncated=True, max_completions=50), str(tmp_path))
    assert (t.num_generations, t.per_device_train_batch_size) == (6, 24)
    assert t.max_steps == 3 * 2          # 50 completions / 24 per step -> 3 steps, 2 updates each
    assert t.scale_rewards == "none" and t.mask_truncated_completions is True and t.num_iterations == 2


def test_world_size_splits_the_batch(tmp_path, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert trl_kwargs(GRPOConfig(batch_size=32, group_size=8))["per_device_train_batch_size"] == 16
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(ValueError, match=r"cannot be shared among 3 processes.*batch_size=48"):
        to_trl_config(GRPOConfig(batch_size=32, group_size=8), str(tmp_path))


def test_unmapped_knobs_refused_or_said(tmp_path):
    with pytest.raises(ValueError, match="dynamic_sampling=True has no trl.GRPOConfig field"):
        to_trl_config(GRPOConfig(dynamic_sampling=True), str(tmp_path))
    with pytest.raises(ValueError, match="baseline='median' has no trl.GRPOConfig field"):
        to_trl_config(GRPOConfig(baseline="median"), str(tmp_path))
    rows = {r["ours"]: r for r in knob_table()}
    for ours in ("dynamic_sampling", "baseline", "GroupRollout(pools=)"):
        assert rows[ours]["trl"] == "(none)" and rows[ours]["note"]
    concepts = {r["concept"] for r in knob_table()}
    assert {"group size G", "clip-higher", "KL penalty", "loss aggregation", "several updates per batch",
            "entropy bonus", "dynamic sampling", "truncation masking", "the reward functions"} <= concepts


def test_settings_follow_the_model(tmp_path):
    """Lab 08's run settings: the toy keeps its 8-token cap; a chat model gets room for its sentence and answer
    line, a small lr, and on a CPU a note with the wait; bf16 reaches TRL's config only when asked."""
    from transformers import AutoTokenizer

    from utils import BASE_MODEL_DIR
    from utils.rl.trl_trainer import CHAT_RUN, TOY_RUN, settings_for

    tok = AutoTokenizer.from_pretrained(BASE_MODEL_DIR)
    fields, bf16, note = settings_for(tok)
    assert fields == TOY_RUN and fields["max_new_tokens"] == 8 and bf16 is False and "shipped" in note
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    fields, bf16, note = settings_for(tok, device="cpu")
    assert fields == CHAT_RUN and fields["max_new_tokens"] >= 64 and fields["lr"] < 1e-4 and bf16 is False
    assert "54 minutes" in note and "GPU" in note   # 54 s a step x 30 steps x twice the tokens
    assert to_trl_config(GRPOConfig(**fields), str(tmp_path)).bf16 is False
    with pytest.raises(ValueError, match="bf16=True needs a GPU with bfloat16"):
        to_trl_config(GRPOConfig(**fields), str(tmp_path), use_cpu=True, bf16=True)


def test_lab09_rows_name_what_trl_has():
    """The tool rows (Lab 09) name a trl.GRPOConfig field, a GRPOTrainer argument and the trainer's own mask that
    the installed TRL has (tests/test_trl_tools.py checks what they do on a scripted episode)."""
    import inspect

    import trl

    rows = {r["ours"]: r for r in KNOB_MAP if r["lab"] == "09"}
    assert len(rows) == 5 and all(r["note"] for r in rows.values())
    assert rows["ToolRollout(max_calls=)"]["trl"] in {f.name for f in dataclasses.fields(trl.GRPOConfig)}
    params = inspect.signature(trl.GRPOTrainer.__init__).parameters
    assert "environment_factory" in params and "tools" in params
    assert "tool_mask" in inspect.getsource(trl.GRPOTrainer._generate_and_score_completions)
    assert "get_reward" in inspect.getsource(trl.GRPOTrainer.__init__)

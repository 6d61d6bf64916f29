"""A GPU runtime (Colab's T4) must not break a lab, tested without a GPU: torch is told CUDA is there,
and the course must still keep the small model on the CPU (where the labs are sized to run, and where the
run cache and the notebooks' asserted numbers were made). What this cannot test: any kernel actually
running on CUDA (docs/SETUP.md says so)."""
import torch

from utils.models.policy import load_policy, sample
from utils.rl.grpo import GRPOConfig
from utils.rl.loop import train_grpo
from utils.rl.trl_trainer import to_trl_config
from utils.setup import setup
from utils.tasks.arithmetic import load_split
from utils.verifiers.arithmetic import strict_reward


def test_a_gpu_runtime_keeps_the_labs_on_the_cpu(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    # a CUDA build of torch (CI's, Colab's) then asks the driver, in Adam's step, whether a CUDA graph is being
    # captured: on a real GPU runtime it says no, here there is no driver to ask
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    assert setup(seed=0, quiet=True) == "cuda"  # reported, as the notebooks print it
    model, tok = load_policy()
    assert next(model.parameters()).device.type == "cpu"
    data = load_split("train", n=16)
    cfg = GRPOConfig(steps=2, batch_size=16, group_size=4, max_new_tokens=4, eval_every=0)
    hist = train_grpo(model, tok, data["prompt"], data["answer"], strict_reward, cfg, progress=False)
    assert len(hist) == 2 and next(model.parameters()).device.type == "cpu"
    roll = sample(model, tok, data["prompt"][:4], max_new_tokens=4, generator=torch.Generator().manual_seed(0))
    assert len(roll.texts) == 4 and roll.completion_ids.device.type == "cpu"
    assert to_trl_config(cfg, str(tmp_path)).use_cpu  # TRL's trainer would otherwise move the model to CUDA

"""GRPO with TRL on several processes (Lab 08): the shipped model, the course's verifier, one global batch.

    python -m utils.rl.launch processes=2 steps=4 out=build/launch2   # starts `accelerate launch` for you
    accelerate launch --multi_gpu --num_processes 2 -m utils.rl.launch steps=4 out=build/launch2   # the same

Each process samples batch_size / processes completions, TRL gathers the rewards so that every group's
advantages are computed over the whole group, and accelerate averages the gradients (DistributedDataParallel:
gloo on CPUs, NCCL on GPUs), so a step is the same step whatever the number of processes. On CPUs
`--multi_gpu` is accelerate's name for "several local processes"; the trainer still runs on the CPU
(use_cpu) unless device=cuda. Every process writes its final weights to out/rank<r>.safetensors and rank 0
writes out/result.json (history, world size, training seconds, completions per second).

sampling=invariant (the default here) makes each completion a function of its prompt, its place in its group,
the step and the seed only: Gumbel-max sampling (exact sampling from softmax(logits / T)) with noise drawn from
a generator seeded per row, so the samples do not depend on how the batch is split among processes. That is
what lets tests/test_launch.py compare a 2-process run with a 1-process run of the same global batch weight
for weight; sampling=plain is TRL's own sampler (each process draws from its own random stream).
"""
import json
import os
import subprocess
import sys

import torch

from utils import checks
from utils.files import atomic_write, check_writable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the course folder
DEFAULTS = dict(processes=1, model="rlvr-base", steps=4, batch_size=32, group_size=8, lr=5e-4, max_new_tokens=8,
                temperature=1.0, beta=0.0, loss_type="grpo", seed=0, n_train=512, lora=0, sampling="invariant",
                device="cpu", out="build/launch")
INTS = ("processes", "steps", "batch_size", "group_size", "max_new_tokens", "seed", "n_train", "lora")
FLOATS = ("lr", "temperature", "beta")


def parse(argv):
    """key=value arguments -> a dict over DEFAULTS, converted and checked (ValueError says what to fix)."""
    if isinstance(argv, (str, bytes)) or not isinstance(argv, (list, tuple)) or \
            not all(isinstance(a, str) for a in argv):
        raise ValueError(f"argv must be a list of key=value strings (as sys.argv[1:]), got {checks._short(argv)}")
    args = dict(DEFAULTS)
    for a in argv:
        key, eq, value = a.partition("=")
        if not eq or key not in DEFAULTS:
            raise ValueError(f"argv: argument {a!r} is not key=value with a key of {sorted(DEFAULTS)}")
        try:
            args[key] = int(value) if key in INTS else float(value) if key in FLOATS else value
        except ValueError:
            raise ValueError(f"{key}={value!r} must be a {'whole number' if key in INTS else 'number'}") from None
    if args["processes"] < 1:
        raise ValueError(f"processes={args['processes']} must be >= 1")
    if args["sampling"] not in ("invariant", "plain"):
        raise ValueError(f"sampling={args['sampling']!r} must be 'invariant' or 'plain'")
    if args["device"] not in ("cpu", "cuda"):
        raise ValueError(f"device={args['device']!r} must be 'cpu' or 'cuda'")
    return args


def config(args):
    """The run's GRPOConfig (checked: a bad value raises a ValueError naming the field)."""
    from utils.rl.grpo import GRPOConfig

    return GRPOConfig(steps=args["steps"], batch_size=args["batch_size"], group_size=args["group_size"],
                      lr=args["lr"], max_new_tokens=args["max_new_tokens"], temperature=args["temperature"],
                      beta=args["beta"], loss_type=args["loss_type"], seed=args["seed"], eval_every=0,
                      track_kl=False)


def run(out, timeout=600, **kw):
    """Run `python -m utils.rl.launch key=value ... out=OUT` in a child process, the way you would from a shell
    (it starts accelerate itself when processes > 1). Returns (weights, result): each rank's final weights
    {name: tensor}, rank 0 first, and rank 0's result.json. A failed run raises RuntimeError with its error."""
    from safetensors.torch import load_file

    from utils.rl.trl_trainer import check_split

    out = os.path.abspath(checks.path("run", "out", out))  # the child runs in the course folder: no relative path
    timeout = checks.number("run", "timeout", timeout, lo=0, lo_open=True)
    args = [f"{k}={v}" for k, v in {**kw, "out": out}.items()]
    parsed = parse(args)  # what the child would refuse, refused here, before it starts
    check_split(config(parsed), parsed["processes"])
    check_writable(out, "out")
    p = subprocess.run([sys.executable, "-m", "utils.rl.launch", *args], capture_output=True, text=True,
                       timeout=timeout, cwd=ROOT)
    if p.returncode:
        raise RuntimeError(f"python -m utils.rl.launch {' '.join(args)} failed (exit {p.returncode}):\n"
                           f"{p.stderr[-3000:]}")
    with open(os.path.join(out, "result.json")) as f:
        result = json.load(f)
    return [load_file(os.path.join(out, f"rank{r}.safetensors")) for r in range(result["world_size"])], result


def weight_distance(a, b):
    """Euclidean distance between two sets of weights {name: tensor}, over a's names."""
    for name, w in (("a", a), ("b", b)):
        if not isinstance(w, dict) or not all(isinstance(t, torch.Tensor) for t in w.values()):
            raise ValueError(f"weight_distance: {name} must be a dict {{name: tensor}} of weights (as run() returns), "
                             f"got {checks._short(w)}")
    if not a:
        raise ValueError("weight_distance: a holds no weights")
    for k, t in a.items():
        if k not in b or b[k].shape != t.shape:
            raise ValueError(f"weight_distance: b lacks a's weight {k!r} of shape {tuple(t.shape)}: both must be "
                             f"weights of the same model")
    return sum(((a[k].double() - b[k].double()) ** 2).sum() for k in a).sqrt().item()


def free_port():
    """A TCP port free on this machine now: two runs at once (two test sessions, say) would both take
    accelerate's default 29500 and the second would fail. (accelerate >= 1.5 picks one for port 0; the lowest
    version requirements.txt allows does not.)"""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_command(args):
    """The accelerate command that runs this module on args['processes'] local processes, on a free port."""
    rest = [f"{k}={v}" for k, v in args.items() if k != "processes"]
    return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes",
            str(args["processes"]), "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
            "--main_process_port", str(free_port()), "-m", "utils.rl.launch", *rest]


class InvariantSampler:
    """A logits processor that samples each row by Gumbel-max with noise seeded by (seed, call, the row's
    tokens so far without its left padding, its index within its group): argmax(logits / T + g), g ~ Gumbel(0, 1),
    is an exact sample of softmax(logits / T) (Gumbel 1954; Maddison et al., arXiv 1411.0052). Returns logits
    that are -inf except at the chosen token, so any sampler after it picks that token. row_offset is this
    process's first row in the global batch (rank * per-process batch), so a row's group index is the same under
    any split; pad_id's leading tokens are left out, since each process pads its rows to its own longest."""

    def __init__(self, seed, group_size, temperature, row_offset=0, pad_id=None):
        self.seed, self.G, self.T, self.row_offset, self.call = seed, group_size, temperature, row_offset, 0
        self.pad_id = pad_id

    def __call__(self, input_ids, scores):  # input_ids [B, L] left padded, scores [B, V]
        out = torch.full_like(scores, float("-inf"))
        for i in range(scores.shape[0]):
            ids = input_ids[i].tolist()
            start = next((j for j, t in enumerate(ids) if t != self.pad_id), len(ids))   # each process pads its own
            key = hash((self.seed, self.call, (self.row_offset + i) % self.G, tuple(ids[start:])))  # rows: unpadded
            gen = torch.Generator().manual_seed(key % (2 ** 63))
            u = torch.rand(scores.shape[1], generator=gen, dtype=torch.float64).clamp_(1e-12, 1 - 1e-12)
            g = -torch.log(-torch.log(u)).to(scores.device)                      # [V] Gumbel noise
            out[i, int(torch.argmax(scores[i].double() / self.T + g))] = 0.0
        return out


def use_invariant_sampling(model, sampler):
    """Make model.generate sample with `sampler` (a new noise stream per generate call). Temperature is set to
    1 in the generation config because the sampler applies it itself."""
    from transformers import LogitsProcessorList

    generate = model.generate

    def generate_invariant(*a, generation_config=None, **kw):
        if generation_config is not None:
            generation_config = generation_config.__class__.from_dict(
                {**generation_config.to_dict(), "temperature": 1.0, "top_k": None, "top_p": None, "do_sample": True})
        sampler.call += 1
        return generate(*a, generation_config=generation_config, logits_processor=LogitsProcessorList([sampler]),
                        **kw)

    model.generate = generate_invariant


def train(args):
    """One process's share of the run (see the module docstring). Returns rank 0's result dict."""
    from safetensors.torch import save_file

    from utils.models.policy import load_policy
    from utils.rl.trl_trainer import train_with_trl, world_size
    from utils.setup import seed_everything
    from utils.tasks.arithmetic import load_split
    from utils.verifiers.arithmetic import strict_reward

    world, rank = world_size(), int(os.environ.get("RANK", "0"))
    if args["processes"] > 1 and world != args["processes"]:
        raise ValueError(f"processes={args['processes']} but this run has {world} process(es): start it with "
                         f"`python -m utils.rl.launch processes={args['processes']} ...` or `accelerate launch "
                         f"--multi_gpu --num_processes {args['processes']} -m utils.rl.launch ...`")
    cfg = config(args)
    seed_everything(args["seed"])
    policy, tok = load_policy(args["model"])
    if args["sampling"] == "invariant":
        use_invariant_sampling(policy, InvariantSampler(args["seed"], cfg.group_size, cfg.temperature,
                                                        rank * (cfg.batch_size // world), tok.pad_token_id))
    peft_config = None
    if args["lora"]:
        from peft import LoraConfig
        peft_config = LoraConfig(r=args["lora"], lora_alpha=2 * args["lora"], lora_dropout=0.0,
                                 target_modules="all-linear", task_type="CAUSAL_LM")
    history, trainer = train_with_trl(policy, tok, load_split("train", n=args["n_train"]), strict_reward, cfg,
                                      progress=rank == 0, peft_config=peft_config,
                                      use_cpu=args["device"] == "cpu")
    os.makedirs(args["out"], exist_ok=True)
    model = trainer.accelerator.unwrap_model(trainer.model)
    weights = {k: v.detach().cpu().clone() for k, v in model.state_dict().items() if v.is_floating_point()}
    path = os.path.join(args["out"], f"rank{rank}.safetensors")
    save_file(weights, path + ".tmp")
    os.replace(path + ".tmp", path)  # whole or not at all
    seconds = history[-1]["seconds"]
    result = {"args": args, "world_size": world, "per_process_batch": cfg.batch_size // world,
              "train_seconds": seconds, "completions_per_second": cfg.batch_size * len(history) / seconds,
              "history": history}
    if rank == 0:
        with atomic_write(os.path.join(args["out"], "result.json")) as f:
            json.dump(result, f, indent=1, default=float)
    return result


def main(argv):
    from utils.rl.trl_trainer import check_split

    args = parse(argv)
    check_split(config(args), args["processes"])  # before any process starts
    check_writable(args["out"], "out")            # and before any training: the weights are saved there
    if args["processes"] > 1 and "LOCAL_RANK" not in os.environ:  # not started by a launcher: start one
        try:
            import accelerate  # noqa: F401
        except ImportError:
            sys.exit("accelerate is not installed: pip install accelerate (requirements.txt lists it)")
        env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
        sys.exit(subprocess.call(launch_command(args), env=env))
    result = train(args)
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"{result['world_size']} process(es): {len(result['history'])} steps in {result['train_seconds']:.1f} s, "
              f"{result['completions_per_second']:.1f} completions/s -> {args['out']}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except ValueError as e:
        sys.exit(f"error: {e}")

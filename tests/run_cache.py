"""The test suite's run cache: each deterministic training run is computed once per test session.

Test machinery, not course code: nothing in utils/ knows about it. It wraps utils.rl.loop.train_grpo
and utils.rl.trl_trainer.train_with_trl from outside, in the notebook kernels the suite starts: the
suite's conftest.py writes an IPython startup file (kernel_startup_dir) and points IPYTHONDIR at it,
so every kernel started from the session, in nbval, in JupyterLab or in the Colab stand-in, runs
install(), which wraps the two trainers the moment utils.rl.loop / utils.rl.trl_trainer is imported.
Then a lab (run in the browser test) and its solution (run down the Colab branch) train each model
once. Off unless the environment variable RLVR_LABS_CACHE names a folder (the suite sets one per
session; RLVR_LABS_CACHE=off computes every run every time).

A run whose inputs match one already computed is loaded instead of recomputed: the same numbers,
because the runs are seeded and deterministic on one machine. The key is a SHA-256 over everything
that decides the result:

- the model's weights and config (and the reference model's), the tokenizer's vocabulary, the data,
  the config dataclass, the held-out sets and extra rewards, the callback;
- functions by their code (bytecode, constants, defaults, closure values, the notebook globals
  they read); pure functions handed over as `Probe(fn, inputs)` by their outputs on fixed inputs,
  so a learner's function that gives bit-identical outputs to the reference shares its runs;
- random generators (a random reward's stream) by their state; a hit also sets them to the state
  the computed call left them in;
- the global random states of Python and NumPy, which a reward function may read (torch's global
  state is not an input: both trainers seed it from the config);
- the source of every file of the utils package that ran and the versions of torch, numpy,
  transformers and trl (any change to the library or to them starts a fresh key);
- torch's thread count: a CPU run's bits depend on it (a 15-step Lab 01 run ends in other weights at
  1 thread than at 2), so a run computed in a 1-thread kernel is never handed to a 2-thread one;
- the CPU kernels torch runs (its instruction set, and the knobs that force another: tools/isa.py), which
  decide a run's bits as much: a cache folder kept between sessions never hands a run across them.

A hit restores every side effect the call had: the trained weights (loaded into the model passed
in), the history (a callback's returned values are part of it; the callback is not called again, so a
run whose callback returned nothing at every step, working by side effect alone, is never stored)
and the global random-number states after the call. Nothing is kept per step. Anything the key
cannot fingerprint (an open file, a time limit) makes the call run uncached, never wrongly cached.

Every wrapped call also leaves one line in the session's ledger (ledger.jsonl in the cache folder): whether
it was loaded, computed and stored, or computed uncached and why, with the seconds it computed for. The
suite's closing table (conftest.py) reads it, so that what a pass computed again is seen, lab by lab.
"""
import contextlib
import hashlib
import io
import json
import os
import pickle
import random
import time
import types
from dataclasses import asdict, is_dataclass
from pathlib import Path

import numpy as np
import torch

ENV = "RLVR_LABS_CACHE"
# The libraries whose versions are part of every key: what a run goes through (a launched run's too). CI's
# environment (requirements-lock.txt) holds the version of each that the setup cell leaves on Colab, so a run
# keys alike here and in the browser pass's Colab kernel (tests/test_cache.py, tests/test_browser.py).
KEYED_LIBRARIES = ("torch", "numpy", "transformers", "trl", "accelerate", "peft", "datasets", "safetensors")
LEDGER = "ledger.jsonl"
_WHY = {"last": ""}  # why the last key() came back None


class Uncacheable(Exception):
    """An argument the key cannot fingerprint: the call runs without the cache."""


class NeverCached:
    """A part of a key that says the call must always run (why: what to say in the ledger)."""

    def __init__(self, why):
        self.why = why


class Probe:
    """A pure function keyed by its outputs on `inputs` (a list of argument tuples)."""

    def __init__(self, fn, inputs):
        self.fn, self.inputs = fn, inputs


def folder():
    """The cache folder (a Path), or None when the cache is off (unset, empty, "0" or "off")."""
    d = os.environ.get(ENV, "")
    return None if d.lower() in ("", "0", "off") else Path(d)


def _kernels():
    """The CPU kernels torch runs: its instruction set and any knob that forces another (tools/isa.py)."""
    knobs = ("MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")
    return torch.backends.cpu.get_cpu_capability() + "".join(f" {k}={os.environ[k]}" for k in knobs
                                                              if k in os.environ)


def _library_source():
    """The utils package's files (the copy this process imported) and the versions of the libraries a
    run goes through (a launched run's too: accelerate, peft, datasets, safetensors)."""
    import sys
    from importlib import metadata

    h = hashlib.sha256()
    utils = Path(sys.modules["utils"].__file__).resolve().parent
    for p in sorted(utils.rglob("*.py")):
        h.update(str(p.relative_to(utils)).encode() + p.read_bytes())
    for name in KEYED_LIBRARIES:
        try:
            h.update(f"{name}={metadata.version(name)};".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name}=-;".encode())
    return h.digest()


def _update(h, obj, seen):
    """Feed a canonical description of obj into the hash h."""
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}[{len(obj)}".encode())
        for x in obj:
            _update(h, x, seen)
        h.update(b"]")
    elif isinstance(obj, dict):
        h.update(f"dict[{len(obj)}".encode())
        for k in sorted(obj, key=repr):
            _update(h, k, seen)
            _update(h, obj[k], seen)
        h.update(b"]")
    elif isinstance(obj, (set, frozenset)):
        _update(h, sorted(obj, key=repr), seen)
    elif isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"tensor{tuple(t.shape)}{t.dtype};".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    elif isinstance(obj, np.ndarray):
        h.update(f"ndarray{obj.shape}{obj.dtype};".encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, np.generic):
        _update(h, obj.item(), seen)
    elif isinstance(obj, np.random.Generator):  # keyed by its state now; a hit sets the state it ended in
        _update(h, obj.bit_generator.state, seen)
        seen.generators.append(obj)
    elif isinstance(obj, torch.Generator):
        _update(h, obj.get_state(), seen)
        seen.generators.append(obj)
    elif isinstance(obj, torch.nn.Module):
        h.update(f"module:{type(obj).__name__};".encode())
        config = getattr(obj, "config", None)
        if config is not None and hasattr(config, "to_dict"):  # not where it was loaded from
            _update(h, {k: v for k, v in config.to_dict().items() if k != "_name_or_path"}, seen)
        _update(h, dict(obj.state_dict()), seen)
    elif hasattr(obj, "get_vocab") and hasattr(obj, "padding_side"):  # a tokenizer
        h.update(f"tokenizer:{type(obj).__name__}:{obj.padding_side};".encode())
        _update(h, obj.get_vocab(), seen)
        _update(h, obj.special_tokens_map, seen)
    elif is_dataclass(obj) and not isinstance(obj, type):
        h.update(f"dataclass:{type(obj).__name__};".encode())
        _update(h, asdict(obj), seen)
        for cls in type(obj).__mro__:  # a class of the notebook's (a rollout of its own) by its methods' code
            if not cls.__module__.startswith(("utils.", "builtins")):
                _update(h, {k: v for k, v in vars(cls).items() if isinstance(v, types.FunctionType)}, seen)
    elif isinstance(obj, (torch.no_grad, torch.enable_grad, torch.inference_mode)):  # a decorator's closure
        h.update(f"grad-mode:{type(obj).__name__}:{getattr(obj, 'mode', '')};".encode())
    elif isinstance(obj, NeverCached):
        raise Uncacheable(obj.why)
    elif isinstance(obj, Probe):
        h.update(b"probe;")
        for args in obj.inputs:
            try:
                out = obj.fn(*args)
            except Exception as e:  # a learner's unfinished function: run uncached, let the run report it
                raise Uncacheable(f"probe failed: {e!r}") from None
            _update(h, out, seen)
    elif isinstance(obj, types.ModuleType):
        h.update(f"module:{obj.__name__};".encode())
    elif isinstance(obj, (types.FunctionType, types.MethodType, types.CodeType)):
        _update_function(h, obj, seen)
    elif type(obj).__module__.split(".")[0] in ("pandas", "datasets"):  # a DataFrame, a datasets.Dataset or Column
        # by its values: a Column's repr shows only its first five rows
        _update(h, obj.to_dict() if hasattr(obj, "to_dict") else list(obj), seen)
    else:
        raise Uncacheable(f"cannot fingerprint a {type(obj).__name__}")


def _update_function(h, fn, seen):
    if id(fn) in seen:  # recursion (a function that reads itself as a global)
        h.update(b"<seen>")
        return
    seen.add(id(fn))
    if isinstance(fn, types.MethodType):
        _update(h, fn.__self__, seen)
        fn = fn.__func__
    code = fn if isinstance(fn, types.CodeType) else fn.__code__
    h.update(f"code:{code.co_name}:{code.co_argcount};".encode() + code.co_code)
    _update(h, list(code.co_names), seen)
    for c in code.co_consts:  # nested functions and lambdas are code constants
        _update(h, c, seen) if isinstance(c, types.CodeType) else h.update(repr(c).encode())
    if isinstance(fn, types.FunctionType):
        _update(h, fn.__defaults__, seen)
        _update(h, fn.__kwdefaults__, seen)
        for cell in fn.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # a cell not yet filled
                contents = "<empty cell>"
            _update(h, contents, seen)
        if fn.__module__ == "__main__":  # a notebook's function: the notebook globals it reads matter
            for name in _global_names(code):
                if name in fn.__globals__:
                    _update(h, name, seen)
                    _update(h, fn.__globals__[name], seen)


def _global_names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return sorted(names)


class _Seen(set):
    """Ids of functions already hashed (recursion guard) and the generators met on the way."""

    def __init__(self):
        super().__init__()
        self.generators = []


class Key(str):
    """A hex key that remembers the random generators among the call's arguments."""
    generators = ()


def key(kind, *parts, global_rng=True):
    """The Key for a call of `kind` with these parts, or None when the cache is off or a part
    cannot be fingerprinted. global_rng=False leaves Python's and NumPy's global random states out (a call
    that draws only from a generator of its own, as sampling does)."""
    if folder() is None:
        return None
    h, seen = hashlib.sha256(kind.encode() + _library_source()), _Seen()
    h.update(f"threads={torch.get_num_threads()};".encode())
    h.update(f"kernels={_kernels()};".encode())
    try:
        if global_rng:
            _update(h, (random.getstate(), np.random.get_state()), seen)
        _update(h, parts, seen)
    except Uncacheable as e:
        _WHY["last"] = str(e)
        return None
    k = Key(h.hexdigest())
    k.generators = list(seen.generators)
    return k


def _rng_states(k):
    gens = [g.bit_generator.state if isinstance(g, np.random.Generator) else g.get_state() for g in k.generators]
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "random": random.getstate(),
            "generators": gens}


def load(k, restore_rng=True):
    """The stored value for key k (None on a miss). Restores the random states the call left, unless
    restore_rng=False (a call that leaves every global random state as it found it)."""
    if k is None:
        return None
    p = folder() / f"{k}.pt"
    if not p.exists():
        return None
    entry = torch.load(p, weights_only=False)
    if not restore_rng:
        return entry["value"]
    rng = entry["rng"]
    torch.set_rng_state(rng["torch"])
    np.random.set_state(rng["numpy"])
    random.setstate(rng["random"])
    for g, state in zip(k.generators, rng["generators"]):
        if isinstance(g, np.random.Generator):
            g.bit_generator.state = state
        else:
            g.set_state(state)
    return entry["value"]


def save(k, value):
    """Store value under key k with the random states as they are now (right after the call)."""
    if k is None:
        return
    d = folder()
    d.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    torch.save({"value": value, "rng": _rng_states(k)}, buf, pickle_protocol=pickle.HIGHEST_PROTOCOL)
    tmp = d / f"{k}.{os.getpid()}.tmp"
    tmp.write_bytes(buf.getvalue())
    tmp.replace(d / f"{k}.pt")  # atomic: a reader never sees half a file


def note(kind, outcome, seconds=0.0, why=""):
    """One line in the session's ledger: a call of `kind` was a "hit" (loaded), a "miss" (computed, then
    stored) or "uncached" (computed, and `why` it could not be stored), computing for `seconds`."""
    d = folder()
    if d is None:
        return
    d.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"t": time.time(), "kind": kind, "outcome": outcome, "seconds": round(seconds, 3),
                       "why": why, "pid": os.getpid(),
                       # the pytest-xdist worker whose test started this kernel (its environment passes down):
                       # two workers run two labs at once, and the suite's table attributes a line by both
                       "worker": os.environ.get("PYTEST_XDIST_WORKER", "")})
    with open(d / LEDGER, "a") as f:  # one short append: whole lines, whatever process writes beside it
        f.write(line + "\n")


def ledger(d):
    """The ledger's lines in folder d (a list of dicts; [] when there is none)."""
    p = Path(d) / LEDGER
    if not p.exists():
        return []
    return [json.loads(ln) for ln in p.read_text().splitlines() if ln.strip()]


@contextlib.contextmanager
def computing(k):
    """Hold key k's lock while looking it up and, on a miss, computing it: a second process that needs the
    same run meanwhile (the suite runs notebooks on several workers) waits and then loads it, instead of
    computing it a second time beside the first."""
    if k is None:
        yield
        return
    try:
        import fcntl
    except ImportError:  # no file locks (Windows): at worst a run is computed twice
        yield
        return
    d = folder()
    d.mkdir(parents=True, exist_ok=True)
    with open(d / f"{k}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# ------------------------------------------------------------------------- wrapping the trainers

def _probes(advantage_fn, loss_fn, cfg):
    """advantage_fn and loss_fn keyed by what they compute on fixed inputs (values and, for the loss,
    its gradient), so a learner's function equal to the reference bit for bit shares its runs."""
    g = torch.Generator().manual_seed(0)
    G = cfg.group_size
    rewards = (torch.rand(4 * G, generator=g) > 0.5).float()
    rewards[:G] = 1.0                                                   # one group with zero spread
    adv = Probe(advantage_fn, [(rewards, G, cfg.scale_std, cfg.baseline)])
    N, T = 4 * G, 6
    logp = -torch.rand(N, T, generator=g) * 3
    old = logp + 0.3 * torch.randn(N, T, generator=g)
    ref = logp + 0.3 * torch.randn(N, T, generator=g)
    mask = (torch.rand(N, T, generator=g) > 0.2).float()

    def loss_and_grad(a):
        x = logp.clone().requires_grad_(True)
        with torch.enable_grad():
            loss = loss_fn(x, old, ref, a, mask, cfg.eps_low, cfg.eps_high, cfg.beta, cfg.loss_type,
                           cfg.max_new_tokens)
            loss.backward()
        return loss.detach(), x.grad

    return adv, Probe(loss_and_grad, [(torch.randn(N, generator=g),)])


def _weights(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _cached(fn, kind, parts, label, with_trainer):
    """fn, a trainer, with the run cache around it: same signature and result. parts(arguments) lists
    what decides the run; with_trainer: fn returns (history, trainer), and a hit returns (history, None)."""
    import functools
    import inspect

    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        a = sig.bind(*args, **kwargs)
        a.apply_defaults()
        cfg, policy = a.arguments["cfg"], a.arguments["policy"]
        k = None if cfg.max_seconds else key(kind, *parts(a.arguments))
        why = "" if k is not None else "a time-limited run (max_seconds)" if cfg.max_seconds else _WHY["last"]
        with computing(k):
            hit = load(k)
            if hit is not None:
                policy.load_state_dict(hit["state"])
                policy.eval()
                note(kind, "hit")
                print(f"({label}, {cfg.steps} steps: the same run was computed earlier in this test session; "
                      f"loaded from the run cache, {ENV})")
                return (hit["history"], None) if with_trainer else hit["history"]
            returned = []                     # what the callback returned, step by step
            callback = a.arguments.get("callback")
            if callback is not None:
                def watched(*cb_args, **cb_kwargs):
                    extra = callback(*cb_args, **cb_kwargs)
                    returned.append(extra is not None)
                    return extra
                a.arguments["callback"] = watched
            t0 = time.perf_counter()
            out = fn(*a.args, **a.kwargs)
            if returned and not any(returned):
                # a callback that never returned anything works by side effect (appending to a list of its own),
                # which a hit cannot replay: store nothing, so every pass runs it (and says so in the ledger)
                k, why = None, "a callback that returned nothing: its side effects cannot be replayed"
            note(kind, "miss" if k is not None else "uncached", time.perf_counter() - t0, why)
            save(k, {"state": _weights(policy), "history": out[0] if with_trainer else out})
            return out
    return wrapper


def train_grpo_parts(a):
    """What decides a train_grpo run, from its bound arguments `a` (every argument but `progress`)."""
    return (a["policy"], a["ref"], a["tokenizer"], a["prompts"], a["answers"], a["reward_fn"], a["cfg"],
            a["eval_prompts"], a["eval_answers"], a["eval_rewards"], a["eval_sets"], a["callback"], a["correct_fn"],
            a["rollout"], *_probes(a["advantage_fn"], a["loss_fn"], a["cfg"]))


def cached_train_grpo(train_grpo):
    """utils.rl.loop.train_grpo with the run cache around it."""
    return _cached(train_grpo, "train_grpo", train_grpo_parts, "GRPO", with_trainer=False)


def train_with_trl_parts(a):
    """What decides a train_with_trl run, from its bound arguments `a` (every argument but `progress`)."""
    import trl
    return (trl.__version__, a["policy"], a["tokenizer"], a["train_dataset"], a["reward_fn"], a["cfg"],
            a["eval_prompts"], a["eval_answers"], a["eval_rewards"], a["eval_sets"], a["correct_fn"], a["use_cpu"],
            a["bf16"],
            None if a["peft_config"] is None else NeverCached(
                "a LoRA run: it wraps the policy in place and the lab reads its trainer"))


def cached_train_with_trl(train_with_trl):
    """utils.rl.trl_trainer.train_with_trl with the run cache around it; a hit returns (history, None)."""
    return _cached(train_with_trl, "train_with_trl", train_with_trl_parts, "TRL GRPO", with_trainer=True)


def cached_sample_in_batches(sample_in_batches):
    """utils.eval.metrics.sample_in_batches, the one sampling path of every evaluation, with the run cache
    around it: the second pass of a notebook in the same environment takes its evaluations' samples from
    the first instead of sampling them again. Keyed by every argument (the model by its weights; the
    samples come from a generator seeded by `seed`, so the global random states are not an input and are
    left as they are). A miss yields the batches as they are sampled and stores them once all are drawn;
    a caller that stops early stores nothing."""
    import functools
    import inspect

    sig = inspect.signature(sample_in_batches)

    @functools.wraps(sample_in_batches)
    def wrapper(*args, **kwargs):
        a = sig.bind(*args, **kwargs)
        a.apply_defaults()
        k = key("sample_in_batches", *a.arguments.values(), global_rng=False)
        hit = load(k, restore_rng=False)
        if hit is not None:
            note("sample_in_batches", "hit")
            yield from hit
            return
        out, seconds, it = [], 0.0, iter(sample_in_batches(*args, **kwargs))
        while True:
            t0 = time.perf_counter()  # the sampling's own time, not the caller's between batches
            try:
                item = next(it)
            except StopIteration:
                break
            finally:
                seconds += time.perf_counter() - t0
            out.append(item)
            yield item
        note("sample_in_batches", "miss" if k is not None else "uncached", seconds, "" if k else _WHY["last"])
        save(k, out)
    return wrapper


def _data_files():
    """The course's data folder (utils.DATA_DIR) by content: what a launched process reads from disk (the base
    model, the splits). By content, not path or time: the Colab pass's copy lives in a clone of its own."""
    from utils import DATA_DIR
    root = Path(DATA_DIR)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def cached_launch_run(run):
    """utils.rl.launch.run (Lab 08: a training in launched processes, 1 or 2 of them) with the run cache around
    it. Keyed by its arguments but `out` and `timeout`, the data folder by content, the library and the
    versions key() holds, and this kernel's thread count (the processes inherit its environment).
    A hit writes back the files the computed call left in `out` (each rank's weights, result.json) and
    returns what it returned."""
    import functools
    import inspect

    sig = inspect.signature(run)

    @functools.wraps(run)
    def wrapper(*args, **kwargs):
        a = sig.bind(*args, **kwargs)
        a.apply_defaults()
        k = key("launch.run", {n: v for n, v in a.arguments.items() if n not in ("out", "timeout")}, _data_files(),
                global_rng=False)
        out = Path(os.path.abspath(a.arguments["out"]))
        with computing(k):
            hit = load(k, restore_rng=False)
            if hit is not None:
                out.mkdir(parents=True, exist_ok=True)
                for name, data in hit["files"].items():
                    (out / name).write_bytes(data)
                note("launch.run", "hit")
                print(f"(launched run, {a.arguments['kw']}: computed earlier in this test session; loaded from the "
                      f"run cache, {ENV})")
                return hit["value"]
            t0 = time.perf_counter()
            value = run(*args, **kwargs)
            note("launch.run", "miss" if k is not None else "uncached", time.perf_counter() - t0,
                 "" if k else _WHY["last"])
            save(k, {"value": value, "files": {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}})
            return value
    return wrapper


def noted_run_attacks(run_attacks):
    """utils.verifiers.attacks.run_attacks (Lab 02's attack table) computed every time, and said so in the
    ledger with its seconds: the attacks measure this machine's wall around this copy of the course (whether
    the folder with the expected answers is readable behind a weaker wall depends on where the copy lies: the
    Colab pass's clone is in a private temporary folder, the browser's is the checkout), so the two passes'
    tables are two measurements, not one computed twice."""
    import functools

    @functools.wraps(run_attacks)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return run_attacks(*args, **kwargs)
        finally:
            if folder() is not None:
                note("run_attacks", "uncached", time.perf_counter() - t0,
                     "attacks on this machine's wall around this copy of the course: measured in each pass")
    return wrapper


WRAPS = {"utils.rl.loop": ("train_grpo", cached_train_grpo),
         "utils.rl.trl_trainer": ("train_with_trl", cached_train_with_trl),
         "utils.eval.metrics": ("sample_in_batches", cached_sample_in_batches),
         "utils.rl.launch": ("run", cached_launch_run),
         "utils.verifiers.attacks": ("run_attacks", noted_run_attacks)}


class _WrapOnImport:
    """A meta-path finder that lets the normal import run, then wraps the trainer in the new module."""

    def find_spec(self, name, path=None, target=None):
        if name not in WRAPS:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run, (attr, wrap) = spec.loader.exec_module, WRAPS[name]

        def exec_module(module):
            run(module)
            setattr(module, attr, wrap(getattr(module, attr)))
        spec.loader.exec_module = exec_module
        return spec


def install():
    """Wrap the trainers in this process (a notebook kernel): now if already imported, else on import."""
    import sys

    for name, (attr, wrap) in WRAPS.items():
        if name in sys.modules:
            fn = getattr(sys.modules[name], attr)
            if not getattr(fn, "__wrapped__", None):
                setattr(sys.modules[name], attr, wrap(fn))
    if not any(isinstance(f, _WrapOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _WrapOnImport())


STARTUP = """# written by the RLVR Labs test suite (tests/run_cache.py): wrap the trainers with the run cache
import importlib.util as _u
_s = _u.spec_from_file_location("rlvr_labs_run_cache", {path!r})
_m = _u.module_from_spec(_s)
_s.loader.exec_module(_m)
_m.install()
del _u, _s, _m
"""


def kernel_startup_dir(folder):
    """Make `folder` an IPython directory whose default profile installs the run cache in every kernel
    started with IPYTHONDIR=folder. Returns folder."""
    startup = Path(folder) / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-rlvr-labs-run-cache.py").write_text(STARTUP.format(path=str(Path(__file__).resolve())))
    return str(folder)

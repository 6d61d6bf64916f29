"""An opt-in on-disk cache of deterministic runs, so the test suite computes each run once.

Off unless the environment variable RLVR_LABS_CACHE names a folder. The test suite turns it on, with
a fresh folder per session (conftest.py), so that a lab (run in the browser test) and its solution (run
down the Colab branch) train each model once; a learner never needs it. With it on, a training run
whose inputs match one already computed is loaded instead of recomputed: the same numbers, because the
runs are seeded and deterministic on one machine. The key is a SHA-256 over everything that decides the result:

- the model's weights and config, the tokenizer's vocabulary, the data, the config dataclass;
- functions by their code (bytecode, constants, defaults, closure values, the notebook globals
  they read); pure functions handed over as `Probe(fn, inputs)` by their outputs on fixed inputs,
  so a learner's function that gives bit-identical outputs to the reference shares its runs;
- random generators (a random reward's stream) by their state; a hit also sets them to the state
  the computed call left them in;
- the source of every file in utils/ and the versions of torch, numpy, transformers and trl (any
  change to the library or to them starts a fresh key).

A hit restores every side effect the call had: the trained weights (loaded into the model passed
in) and the global random-number states after the call. Anything the key cannot fingerprint
(an open file, a time limit) makes the call run uncached, never wrongly cached.
"""
import hashlib
import io
import os
import pickle
import random
import types
from dataclasses import asdict, is_dataclass
from pathlib import Path

import numpy as np
import torch

ENV = "RLVR_LABS_CACHE"
_UTILS = Path(__file__).resolve().parent


class Uncacheable(Exception):
    """An argument the key cannot fingerprint: the call runs without the cache."""


class Probe:
    """A pure function keyed by its outputs on `inputs` (a list of argument tuples)."""

    def __init__(self, fn, inputs):
        self.fn, self.inputs = fn, inputs


def folder():
    """The cache folder (a Path), or None when the cache is off (unset, empty, "0" or "off")."""
    d = os.environ.get(ENV, "")
    return None if d.lower() in ("", "0", "off") else Path(d)


def _library_source():
    """utils/*.py and the versions of the libraries a run goes through."""
    from importlib import metadata

    h = hashlib.sha256()
    for p in sorted(_UTILS.glob("*.py")):
        h.update(p.name.encode() + p.read_bytes())
    for name in ("torch", "numpy", "transformers", "trl"):
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
    elif type(obj).__module__.split(".")[0] in ("pandas", "datasets"):  # a DataFrame, a datasets.Dataset
        _update(h, obj.to_dict() if hasattr(obj, "to_dict") else repr(obj), seen)
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


def key(kind, *parts):
    """The Key for a call of `kind` with these parts, or None when the cache is off or a part
    cannot be fingerprinted."""
    if folder() is None:
        return None
    h, seen = hashlib.sha256(kind.encode() + _library_source()), _Seen()
    try:
        _update(h, parts, seen)
    except Uncacheable:
        return None
    k = Key(h.hexdigest())
    k.generators = list(seen.generators)
    return k


def _rng_states(k):
    gens = [g.bit_generator.state if isinstance(g, np.random.Generator) else g.get_state() for g in k.generators]
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "random": random.getstate(),
            "generators": gens}


def load(k):
    """The stored value for key k (None on a miss). Restores the random states the call left."""
    if k is None:
        return None
    p = folder() / f"{k}.pt"
    if not p.exists():
        return None
    entry = torch.load(p, weights_only=False)
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

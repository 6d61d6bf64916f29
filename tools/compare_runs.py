"""Are two sessions' runs bit-identical? For a refactor that must not change any number.

    RLVR_LABS_CACHE=/tmp/before python -m pytest -n 0 solutions     # on the old commit (a git worktree)
    RLVR_LABS_CACHE=/tmp/after  python -m pytest -n 0 solutions     # on the new one
    python tools/compare_runs.py /tmp/before /tmp/after

Each folder is a run cache (tests/run_cache.py) filled by one session that ran the notebooks one after another:
one file per training run (train_grpo, train_with_trl: the final weights and the history) and per evaluation's
samples (sample_in_batches), with the random states each call left. The keys differ between commits (they
hold the library's source), so the files are paired in the order they were written. Every tensor must be
equal bit for bit and every other value equal, except wall-clock readings (seconds, every *_seconds,
completions_per_second) and a launched run's temporary output folder (its result files are compared as JSON). A
run with a time limit (max_seconds) is never cached, so it is not compared. Calls are paired by what they were
(a run's steps and keys, the samples' shapes), so a call one session lacks (a cell that timed out there) shows
as unpaired rather than shifting every pair after it. Exit status 1 on any difference, and on an unpaired call
unless --allow-unpaired (which lists them).
"""
import dataclasses
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the pickled values hold utils' classes
CLOCK = {"seconds", "completions_per_second"}  # and every *_seconds: wall-clock readings, not results
SCRATCH = {"out"}  # a launched run's output folder: a new temporary folder each session


def _skipped(key, a, b):
    """A wall-clock reading, or the temporary folder a launched run wrote to."""
    key = str(key)
    if key in CLOCK or key.endswith("_seconds"):
        return True
    tmp = tempfile.gettempdir()
    return key in SCRATCH and all(isinstance(x, str) and x.startswith(tmp) for x in (a, b))


def diff(a, b, where="value"):
    """The first difference between a and b as a string, or None."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        same = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype and \
            a.shape == b.shape and torch.equal(a, b)
        return None if same else f"{where}: tensors differ"
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return None if np.array_equal(a, b) else f"{where}: arrays differ"
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a) is not type(b):
            return f"{where}: {type(a).__name__} vs {type(b).__name__}"
        return next((d for f in dataclasses.fields(a)
                     if (d := diff(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}"))), None)
    if isinstance(a, dict) and isinstance(b, dict):
        keys = set(a) | set(b)
        if set(a) != set(b):
            return f"{where}: keys {sorted(map(str, set(a) ^ set(b)))} in one only"
        return next((d for k in sorted(keys, key=str) if not _skipped(k, a[k], b[k])
                     if (d := diff(a[k], b[k], f"{where}[{k!r}]"))), None)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return f"{where}: lengths {len(a)} vs {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := diff(x, y, f"{where}[{i}]"))), None)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return None
    if isinstance(a, bytes) and isinstance(b, bytes) and where.endswith(".json']"):  # a launched run's result file
        return diff(_json(a), _json(b), where)
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def _json(raw):
    """A launched run's JSON file as a value to compare (diff skips its clock readings and temporary folder)."""
    import json

    return json.loads(raw)


def entries(folder):
    """The cached calls of a folder in the order they were written; files written within the filesystem clock's
    resolution (the same mtime) in the order of their names, not the directory's."""
    files = sorted(Path(folder).glob("*.pt"), key=lambda p: (p.stat().st_mtime_ns, p.name))
    return [torch.load(f, weights_only=False) for f in files]


def signature(entry):
    """What a call was, without its numbers: a training run's steps and record keys, or the shapes of an
    evaluation's samples. Used to pair the two sessions' calls when one session has calls the other lacks."""
    v = entry["value"]
    if isinstance(v, dict) and "history" in v:
        return ("run", len(v["history"]), tuple(sorted(v["history"][0])) if v["history"] else ())
    if isinstance(v, list):
        return ("samples", tuple((i, tuple(r.completion_ids.shape)) for i, r in v))
    return ("other", repr(type(v)))


def main(a, b, allow_unpaired=False):
    """Compare the sessions' calls in order. Calls are paired by signature (difflib), so a call one session
    lacks (a cell that timed out there) shows as unpaired instead of shifting every pair after it; any unpaired
    call is a difference unless allow_unpaired (then it is listed)."""
    import difflib

    ea, eb = entries(a), entries(b)
    print(f"{a}: {len(ea)} cached calls; {b}: {len(eb)}")
    sm = difflib.SequenceMatcher(None, [signature(e) for e in ea], [signature(e) for e in eb], autojunk=False)
    bad, paired, runs = 0, 0, 0
    for i, j, n in sm.get_matching_blocks():
        for k in range(n):
            x, y = ea[i + k], eb[j + k]
            paired += 1
            runs += isinstance(x["value"], dict) and "history" in x["value"]
            d = diff(x, y, f"calls {i + k} / {j + k}")
            if d:
                bad += 1
                print("DIFFERENT", d)
    unpaired = (len(ea) - paired, len(eb) - paired)
    if any(unpaired):
        where = [f"{a} {i1}-{i2 - 1} / {b} {j1}-{j2 - 1}" for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"]
        print(f"{'UNPAIRED' if not allow_unpaired else 'unpaired (allowed)'}: {unpaired[0]} calls of {a} and "
              f"{unpaired[1]} of {b} have no counterpart ({'; '.join(where)})")
        bad += 0 if allow_unpaired else 1
    print(f"{'all identical' if not bad else f'{bad} differences'}: {paired} pairs of calls compared ({runs} training "
          f"runs with weights and history, the rest evaluations' samples), bit for bit")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3], allow_unpaired="--allow-unpaired" in sys.argv))

"""Tasks: problem generators, prompt formats and the fixed splits under data/ (arithmetic.py, scratchpad.py),
choosing and ordering prompts (curation.py), a chat model's prompts (chat.py); read_jsonl and write_jsonl,
the splits' file format."""
import json
import os

from utils import checks
from utils.files import atomic_write

ROWS = "rows.json"  # beside the splits: {file name: rows}, so that a short file is caught when it is read


def write_jsonl(splits, folder):
    """Write each split of {name: [row dict, ...]} to folder/<name>.jsonl, one JSON object a line, each file
    whole or not at all (utils.files.atomic_write), and their row counts to folder/rows.json."""
    folder = checks.path("write_jsonl", "folder", folder)
    if not isinstance(splits, dict) or not all(isinstance(k, str) and k and isinstance(v, (list, tuple)) and
                                               all(isinstance(r, dict) for r in v) for k, v in splits.items()):
        raise ValueError(f"write_jsonl: splits must be a dict {{name: [row dict, ...]}}, got {checks._short(splits)}")
    os.makedirs(folder, exist_ok=True)
    for name, rows in splits.items():
        with atomic_write(os.path.join(folder, f"{name}.jsonl")) as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    counts = {}
    if os.path.exists(os.path.join(folder, ROWS)):
        with open(os.path.join(folder, ROWS)) as f:
            counts = json.load(f)
    with atomic_write(os.path.join(folder, ROWS)) as f:
        json.dump(counts | {f"{name}.jsonl": len(rows) for name, rows in splits.items()}, f, indent=1, sort_keys=True)
    return splits


def read_jsonl(path, writer):
    """The JSON-lines file `path` as a datasets.Dataset; a missing file, or one with fewer rows than rows.json
    beside it says were written, names the module that writes it."""
    import datasets

    path = checks.path("read_jsonl", "path", path)
    if not isinstance(writer, str) or not writer:
        raise ValueError(f"read_jsonl: writer must name the module that writes the file (a str such as "
                         f"'utils.tasks.arithmetic'), got {checks._short(writer)}")
    if not os.path.exists(path):
        raise FileNotFoundError(f"read_jsonl: path={path} is missing; run `python -m {writer}` to write the splits")
    ds = datasets.load_dataset("json", data_files=path, split="train")
    counts = os.path.join(os.path.dirname(path), ROWS)
    if os.path.exists(counts):
        with open(counts) as f:
            want = json.load(f).get(os.path.basename(path))
        if want is not None and len(ds) != want:
            raise ValueError(f"{path} holds {len(ds)} rows where {want} were written (a cut-off copy or write?); "
                             f"write it again with `python -m {writer}`")
    return ds


def split_args(where, splits, name, n, data_dir):
    """load_split's arguments after checking: name one of `splits`, n None or an integer >= 1, data_dir a folder.
    ValueError (FileNotFoundError for a missing folder) naming the argument otherwise."""
    if not isinstance(name, str) or name not in splits:
        raise ValueError(f"{where}: unknown split name={checks._short(name)}; allowed: {sorted(splits)}")
    if n is not None:
        n = checks.number(where, "n", n, lo=1, integer=True)
    return name, n, checks.path(where, "data_dir", data_dir, "folder")


def split_sizes(where, defaults, sizes):
    """make_splits' sizes after checking: None or a dict {split: rows} over the splits of `defaults`, each an integer
    from 0 to 10 x the default train split; returned with the defaults filled in."""
    if sizes is not None and not isinstance(sizes, dict):
        raise ValueError(f"{where}: sizes must be a dict {{split: rows}}, got {checks._short(sizes)}")
    out = dict(defaults, **(sizes or {}))
    for name, n in out.items():
        if name not in defaults:
            raise ValueError(f"{where}: sizes has an unknown split {name!r}; the splits are {list(defaults)}")
        out[name] = checks.number(where, f"sizes[{name!r}]", n, lo=0, hi=10 * defaults["train"], integer=True)
    return out

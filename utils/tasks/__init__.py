"""Tasks: problem generators, prompt formats and the fixed splits under data/ (arithmetic.py, scratchpad.py),
choosing and ordering prompts (curation.py), a chat model's prompts (chat.py); read_jsonl and write_jsonl,
the splits' file format."""
import json
import os

from utils.files import atomic_write

ROWS = "rows.json"  # beside the splits: {file name: rows}, so that a short file is caught when it is read


def write_jsonl(splits, folder):
    """Write each split of {name: [row dict, ...]} to folder/<name>.jsonl, one JSON object a line, each file
    whole or not at all (utils.files.atomic_write), and their row counts to folder/rows.json."""
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

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing; run `python -m {writer}` to write the splits")
    ds = datasets.load_dataset("json", data_files=path, split="train")
    counts = os.path.join(os.path.dirname(path), ROWS)
    if os.path.exists(counts):
        with open(counts) as f:
            want = json.load(f).get(os.path.basename(path))
        if want is not None and len(ds) != want:
            raise ValueError(f"{path} holds {len(ds)} rows where {want} were written (a cut-off copy or write?); "
                             f"write it again with `python -m {writer}`")
    return ds

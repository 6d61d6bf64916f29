"""Tasks: problem generators, prompt formats and the fixed splits under data/ (arithmetic.py, scratchpad.py),
choosing and ordering prompts (curation.py), a chat model's prompts (chat.py); read_jsonl and write_jsonl,
the splits' file format."""
import json
import os


def write_jsonl(splits, folder):
    """Write each split of {name: [row dict, ...]} to folder/<name>.jsonl, one JSON object a line."""
    os.makedirs(folder, exist_ok=True)
    for name, rows in splits.items():
        with open(os.path.join(folder, f"{name}.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return splits


def read_jsonl(path, writer):
    """The JSON-lines file `path` as a datasets.Dataset; a missing file names the module that writes it."""
    import datasets

    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing; run `python -m {writer}` to write the splits")
    return datasets.load_dataset("json", data_files=path, split="train")

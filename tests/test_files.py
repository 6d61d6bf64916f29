"""utils/files.py and the writers that use it: whole or not at all, and a short file is refused by name."""
import json
import os

import pytest

from utils.files import atomic_dir, atomic_write, check_writable


def test_atomic_write_keeps_the_old_file_when_the_write_fails(tmp_path):
    p = tmp_path / "a.json"
    p.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(p) as f:
            f.write("half of the new")
            raise RuntimeError("killed mid-write")
    assert p.read_text() == "old" and os.listdir(tmp_path) == ["a.json"]  # no temporary left behind
    with atomic_write(p) as f:
        f.write("new")
    assert p.read_text() == "new"


def test_atomic_dir_swaps_the_whole_folder_or_nothing(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_dir(d) as tmp:
            (open(os.path.join(tmp, "config.json"), "w")).write("new")
            raise KeyboardInterrupt
    assert (d / "config.json").read_text() == "old" and sorted(os.listdir(tmp_path)) == ["model"]
    with atomic_dir(d) as tmp:
        with open(os.path.join(tmp, "weights"), "w") as f:
            f.write("w")
    assert sorted(os.listdir(d)) == ["weights"] and sorted(os.listdir(tmp_path)) == ["model"]


def test_check_writable_names_the_argument(tmp_path):
    check_writable(tmp_path / "new" / "out", "out")
    assert (tmp_path / "new" / "out").is_dir() and not os.listdir(tmp_path / "new" / "out")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OSError, match=r"out='.*file/sub' cannot be written"):
        check_writable(blocker / "sub", "out")


def test_a_short_split_is_refused_with_how_to_rebuild_it(tmp_path):
    from utils.tasks import read_jsonl, write_jsonl

    write_jsonl({"train": [{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(50)]}, tmp_path)
    assert json.loads((tmp_path / "rows.json").read_text()) == {"train.jsonl": 50}
    assert len(read_jsonl(tmp_path / "train.jsonl", "utils.tasks.arithmetic")) == 50
    lines = (tmp_path / "train.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "train.jsonl").write_text("".join(lines[:20]))  # cut at a line: it would load silently
    with pytest.raises(ValueError, match=r"holds 20 rows where 50 were written.*python -m utils.tasks.arithmetic"):
        read_jsonl(tmp_path / "train.jsonl", "utils.tasks.arithmetic")


def test_the_shipped_splits_match_their_row_counts():
    from utils import DATA_DIR

    for task in ("arithmetic", "scratchpad"):
        counts = json.loads(open(os.path.join(DATA_DIR, task, "rows.json")).read())
        assert counts and all(sum(1 for _ in open(os.path.join(DATA_DIR, task, f))) == n for f, n in counts.items())

"""tools/compare_runs.py, the bit-identity check for refactors: it sees a one-ulp change and ignores the clock."""
import os

import torch
from course_tools import tool

cr = tool("compare_runs")


def test_diff_finds_one_ulp_and_ignores_wall_clock():
    w = torch.tensor([1.0, 2.0])
    run = {"state": {"w": w}, "history": [{"step": 1, "loss": 0.5, "seconds": 1.0, "train_seconds": 0.9}]}
    same = {"state": {"w": w.clone()}, "history": [{"step": 1, "loss": 0.5, "seconds": 7.0, "train_seconds": 6.0}]}
    assert cr.diff(run, same) is None
    nudged = {"state": {"w": torch.nextafter(w, w + 1)}, "history": same["history"]}
    assert "tensors differ" in cr.diff(run, nudged)
    assert "0.5 vs 0.5000001" in cr.diff(run, {"state": same["state"], "history": [dict(same["history"][0],
                                                                                          loss=0.5000001)]})
    assert "keys" in cr.diff({"a": 1}, {"a": 1, "b": 2}) and "lengths" in cr.diff([1], [1, 2])


def test_every_clock_reading_and_a_launched_runs_temporary_folder_are_skipped():
    import json
    import tempfile

    tmp = tempfile.gettempdir()
    a = {"history": [{"loss": 0.5, "sample_seconds": 1.0, "completions_per_second": 9.0}],
         "files": {"result.json": json.dumps({"args": {"out": f"{tmp}/a1", "lr": 0.1}, "train_seconds": 2}).encode()}}
    b = {"history": [{"loss": 0.5, "sample_seconds": 3.0, "completions_per_second": 1.0}],
         "files": {"result.json": json.dumps({"args": {"out": f"{tmp}/b2", "lr": 0.1}, "train_seconds": 5}).encode()}}
    assert cr.diff(a, b) is None
    b["files"]["result.json"] = json.dumps({"args": {"out": f"{tmp}/b2", "lr": 0.2}, "train_seconds": 5}).encode()
    assert "lr" in cr.diff(a, b)                                         # the JSON's results are compared
    assert "out" in cr.diff({"out": "/work/runs/a"}, {"out": "/work/runs/b"})   # a folder of one's own is a result


def _save(path, loss, mtime_ns):
    torch.save({"value": {"history": [{"loss": loss}]}, "rng": None}, path)
    os.utime(path, ns=(mtime_ns, mtime_ns))  # the order of writing, set: not left to the filesystem's clock


def test_main_pairs_files_in_order_and_fails_on_a_difference(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for i, (x, y) in enumerate([(1.0, 1.0), (2.0, 2.5)]):
        _save(a / f"{i}.pt", x, 10**9 * (i + 1))
        _save(b / f"k{1 - i}.pt", y, 10**9 * (i + 1))  # b's names sort the other way: the time decides
    assert cr.main(a, b) == 1
    _save(b / "k0.pt", 2.0, 2 * 10**9)
    assert cr.main(a, b) == 0


def test_files_written_in_the_same_clock_tick_pair_by_name(tmp_path):
    """Two files with one mtime (a coarse filesystem clock) are ordered by name, not by the directory's order."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for name, loss in (("1.pt", 2.0), ("0.pt", 1.0)):
        _save(a / name, loss, 10**9)
        _save(b / name, loss, 10**9)
    assert [e["value"]["history"][0]["loss"] for e in cr.entries(a)] == [1.0, 2.0]
    assert cr.main(a, b) == 0


def test_a_call_one_session_lacks_is_unpaired_not_a_shift(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for i, h in enumerate([[{"loss": 1.0}], [{"loss": 2.0}, {"loss": 2.5}], [{"loss": 3.0}]]):
        torch.save({"value": {"history": h}, "rng": None}, a / f"{i}.pt")
        if i != 1:  # b lacks the middle run (its cell timed out there)
            torch.save({"value": {"history": h}, "rng": None}, b / f"{i}.pt")
    assert cr.main(a, b) == 1 and "UNPAIRED: 1 calls" in capsys.readouterr().out
    assert cr.main(a, b, allow_unpaired=True) == 0 and "2 pairs of calls compared" in capsys.readouterr().out

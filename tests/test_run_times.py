"""tools/run_times.py: one table of each lab's times (docs/run_times.json) feeds the lab's header, the README's lab
table and "How long" paragraph, and the instructor guide's "Timing at a glance"; none may disagree with it."""
import os

import pytest
from course_tools import tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def rt():
    return tool("run_times")


def test_the_three_places_agree_with_the_table(rt):
    bad = rt.check()
    assert not bad, "\n".join(bad) + ("\nChange docs/run_times.json if the times moved, then run "
                                       "python tools/run_times.py")


def test_every_lab_has_its_row(rt):
    labs = rt.load()
    assert sorted(labs) == sorted(os.path.basename(p)[:2] for p in rt.solutions())
    for lab, row in labs.items():
        assert row["title"] and row["slow_cells"] and row["measured"], lab
        assert 1 <= len(row["work_minutes"]) <= 2 and 1 <= len(row["run_seconds"]) <= 2, lab


@pytest.mark.parametrize("seconds, want", [([107], "2"), ([98], "1.5"), ([32], "0.5"), ([10], "0.5"), ([63], "1"),
                                           ([159, 177], "2.5-3"), ([55, 70], "1"), ([134], "2"), ([147], "2.5")])
def test_run_minutes_round_to_the_half_minute(rt, seconds, want):
    assert rt.run_minutes({"run_seconds": seconds}) == want


def test_the_places_it_writes_by_hand(rt):
    row = {"title": "x", "work_minutes": [60, 90], "run_seconds": [32], "measured": "2026-01-01", "slow_cells": "all"}
    assert rt.header_sentence(row) == ("**Time:** 60-90 minutes to work through; about half a minute to run top to "
                                       "bottom on a 2-core CPU.")
    assert rt.readme_cell(row) == "60-90 / 0.5"
    assert rt.guide_table({"01": row}).splitlines()[-1] == "| 01 x | ~0.5 min (32 s; 2026-01-01) | 60-90 min | all |"
    old = "**Time:** about 5 minutes to run.\nPrerequisites: Labs 01 and 02."
    assert " ".join(rt.new_header_time(old, row).split()).endswith("2-core CPU. Prerequisites: Labs 01 and 02.")
    two = {"01": row, "02": dict(row, work_minutes=[75], run_seconds=[600])}
    assert rt.how_long(two).startswith("**How long.** The whole course takes about 2 to 3 hours: two labs of 60 to 90 "
                                       "minutes each, 135-165 minutes in all. The computer's share of that, running "
                                       "every cell, is about 10 minutes")

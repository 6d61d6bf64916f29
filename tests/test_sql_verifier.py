"""utils.verifiers.sql: multiset judging, the labelled adversarial suite, the sandbox (the DB is
never changed, attacks end in time), robustness, speed, and the database build's determinism."""
import hashlib
import os
import statistics
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utils.verifiers.sql import (
    DB_PATH,
    MAX_SQL_CHARS,
    ORDERS,
    USERS,
    build_database,
    load_sql_suite,
    run_readonly,
    sql_compiles,
    sql_execution_reward,
    sql_syntax_reward,
)

SUITE = load_sql_suite()
FR = "SELECT name FROM users WHERE country = 'FR'"  # rows: Alice, Bruno, Alice, Chloé
TIMEOUT_S = 2.0
# files the suite's ATTACH / VACUUM INTO / load_extension attacks name: none may appear
ATTACK_FILES = ["/tmp/rlvr_sql_attack.db", "/tmp/rlvr_sql_attack_copy.db", "/tmp/rlvr_sql_attack.so"]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def db_state():
    """What must not change: the DB's bytes and the files beside it (no -journal, -wal, -shm)."""
    return sha256(DB_PATH), sorted(os.listdir(os.path.dirname(DB_PATH)))


def execution(candidate, reference=FR, **kw):
    return sql_execution_reward([candidate], [reference], **kw)[0]


# --- the multiset rule, by hand ------------------------------------------------------------------

def test_reference_rows_by_hand():
    rows, err = run_readonly(FR)
    assert err is None
    assert sorted(rows) == [("Alice",), ("Alice",), ("Bruno",), ("Chloé",)]


@pytest.mark.parametrize("candidate, want", [
    (FR, 1.0),
    (FR + " ORDER BY name DESC", 1.0),                     # order is free
    ("SELECT name AS n FROM users WHERE country IN ('FR')", 1.0),  # column names are free
    ("SELECT DISTINCT name FROM users WHERE country = 'FR'", 0.0),  # one Alice missing
    (FR + " UNION ALL SELECT name FROM users WHERE id = 1", 0.0),   # a third Alice
    # same set {Alice, Bruno, Chloé}, same row count, wrong multiplicities: a set (or a sorted
    # DISTINCT) comparison would pass it, the multiset comparison does not
    ("SELECT 'Alice' UNION ALL SELECT 'Bruno' UNION ALL SELECT 'Bruno' UNION ALL SELECT 'Chloé'", 0.0),
    # rows, not method, are judged: a hard-coded answer with the right multiset passes
    ("SELECT 'Chloé' UNION ALL SELECT 'Alice' UNION ALL SELECT 'Bruno' UNION ALL SELECT 'Alice'", 1.0),
    ("SELECT name, country FROM users WHERE country = 'FR'", 0.0),  # an extra column
])
def test_multiset_rule(candidate, want):
    assert execution(candidate) == want


def test_values_compare_as_python_values_and_column_order_counts():
    ref = "SELECT country, SUM(amount) FROM orders JOIN users ON users.id = user_id GROUP BY country"
    assert execution("SELECT country, TOTAL(amount) FROM orders JOIN users ON users.id = user_id "
                     "GROUP BY country", ref) == 1.0  # 150.0 == 150
    assert execution("SELECT SUM(amount), country FROM orders JOIN users ON users.id = user_id "
                     "GROUP BY country", ref) == 0.0


# --- the labelled suite ----------------------------------------------------------------------------

KINDS_REQUIRED = {"reference", "other_order", "aliases", "subquery_not_join", "other_expression",
                  "missing_duplicate", "select_everything", "wrong_filter", "syntax_error", "empty",
                  "drop_table", "delete", "insert", "attach", "pragma_writable_schema",
                  "runaway_recursive_cte", "two_statements", "non_ascii_garbage", "too_long"}


def test_suite_shape():
    assert len(SUITE) >= 14
    assert len({c["id"] for c in SUITE}) == len(SUITE)
    for c in SUITE:
        assert set(c) == {"id", "kind", "question", "reference_sql", "candidate", "label"}
        assert c["label"] in (0.0, 1.0)
    assert KINDS_REQUIRED <= {c["kind"] for c in SUITE}
    assert sum(c["label"] for c in SUITE) >= 10  # right answers written differently, not just attacks
    assert any(len(c["candidate"]) > MAX_SQL_CHARS for c in SUITE)
    assert any(not c["candidate"].isascii() for c in SUITE)


@pytest.fixture(scope="module")
def judged():
    """Every suite case judged once by both verifiers, with its time and the DB state after it."""
    before = db_state()
    attack_files_before = {p: os.path.exists(p) for p in ATTACK_FILES}
    out = {}
    for c in SUITE:
        t0 = time.perf_counter()
        strong = sql_execution_reward([c["candidate"]], [c["reference_sql"]], timeout_s=TIMEOUT_S)
        seconds = time.perf_counter() - t0
        weak = sql_syntax_reward([c["candidate"]], reference_sql=[c["reference_sql"]])
        out[c["id"]] = {"strong": strong[0], "weak": weak[0], "seconds": seconds, "state": db_state()}
    return before, attack_files_before, out


def test_execution_verifier_agrees_with_every_label(judged):
    _, _, out = judged
    misses = [f"{c['id']}: label {c['label']}, scored {out[c['id']]['strong']}"
              for c in SUITE if out[c["id"]]["strong"] != c["label"]]
    assert misses == [], "strong verifier misses:\n" + "\n".join(misses)


def test_syntax_verifier_is_weak(judged):
    _, _, out = judged
    weak = {c["kind"]: out[c["id"]]["weak"] for c in SUITE if c["id"].startswith("fr_names/")}
    # it passes wrong answers and writes: it only checks that the text compiles...
    for kind in ["select_everything", "wrong_filter", "missing_duplicate", "drop_table", "delete",
                 "insert", "attach", "runaway_recursive_cte"]:
        assert weak[kind] == 1.0, kind
    # ...so it rejects only malformed text
    for kind in ["syntax_error", "unknown_column", "empty", "comment_only", "non_ascii_garbage",
                 "two_statements", "nul_byte", "too_long"]:
        assert weak[kind] == 0.0, kind
    # it never fails a right answer; it passes most wrong ones
    assert all(out[c["id"]]["weak"] == 1.0 for c in SUITE if c["label"] == 1.0)
    fooled = sum(out[c["id"]]["weak"] for c in SUITE if c["label"] == 0.0)
    assert fooled >= 0.5 * sum(c["label"] == 0.0 for c in SUITE)


def test_no_case_changes_the_database_or_creates_files(judged):
    before, attack_files_before, out = judged
    for c in SUITE:
        assert out[c["id"]]["state"] == before, c["id"]
    for path, existed in attack_files_before.items():
        if not existed:
            assert not os.path.exists(path), path


def test_every_case_ends_in_time(judged):
    _, _, out = judged
    slow = {cid: round(r["seconds"], 2) for cid, r in out.items() if r["seconds"] > TIMEOUT_S + 1.0}
    assert slow == {}


def test_timeout_is_wall_clock_and_configurable():
    runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c"
    t0 = time.perf_counter()
    rows, err = run_readonly(runaway, timeout_s=0.3)
    assert rows is None and "interrupted" in err
    assert time.perf_counter() - t0 < 1.3
    t0 = time.perf_counter()
    assert sql_compiles(runaway) == 1.0  # the weak check compiles, never runs it
    assert time.perf_counter() - t0 < 0.5


# --- run_readonly ------------------------------------------------------------------------------------

def test_run_readonly_caps_rows():
    assert len(run_readonly("SELECT * FROM orders", max_rows=len(ORDERS))[0]) == len(ORDERS)
    rows, err = run_readonly("SELECT * FROM orders", max_rows=len(ORDERS) - 1)
    assert rows is None and "too many rows" in err
    # 9,000 rows of 600 characters: under the row cap, over the result-size cap
    big = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 9000) " \
          "SELECT hex(zeroblob(300)) FROM c"
    assert run_readonly(big) == (None, "result too large")


def test_run_readonly_errors_instead_of_raising(tmp_path):
    assert run_readonly(None)[0] is None and run_readonly(b"SELECT 1")[0] is None
    assert "longer than" in run_readonly("SELECT 1" + " " * MAX_SQL_CHARS)[1]
    assert run_readonly("DROP TABLE users")[1] is not None
    missing = tmp_path / "missing.db"
    rows, err = run_readonly("SELECT 1", db_path=missing)
    assert rows is None and err and not missing.exists()  # read-only open does not create it


# --- the reward signature, robustness -----------------------------------------------------------------

def test_reward_signature():
    comps = [FR, "SELECT name FROM users", [{"role": "assistant", "content": FR}], None]
    assert sql_execution_reward(comps, FR) == [1.0, 0.0, 1.0, 0.0]            # one reference for all
    assert sql_execution_reward(comps, [FR] * 4, prompts=["q"] * 4, completion_ids=[[1]] * 4) \
        == [1.0, 0.0, 1.0, 0.0]                                                 # TRL column + extras
    assert sql_execution_reward([FR, FR], [FR]) == [1.0, 0.0]                  # missing reference: 0
    assert sql_execution_reward(FR, FR) == [1.0]                               # one bare completion
    assert sql_execution_reward([FR], ["SELEC broken"]) == [0.0]              # broken reference
    assert sql_execution_reward([FR], [None]) == [0.0]
    assert sql_execution_reward([FR], [[FR]]) == [0.0]                         # unhashable reference
    assert sql_execution_reward([FR], None) == [0.0]
    assert sql_syntax_reward(comps, reference_sql=[FR] * 4) == [1.0, 1.0, 1.0, 0.0]
    assert sql_syntax_reward(None) == [] and sql_execution_reward(None, FR) == []


def test_junk_scores_zero_quickly():
    junk = [None, 1, 3.5, b"SELECT 1", ["SELECT 1"], {"content": FR}, "x" * 1_000_000,
            FR + " " * 1_000_000, "é" * 1_000_000, "\x00" * 1000]
    t0 = time.perf_counter()
    assert sql_execution_reward(junk, FR) == [0.0] * len(junk)
    assert sql_syntax_reward(junk) == [0.0] * len(junk)
    assert time.perf_counter() - t0 < 1.0


def test_ordinary_query_is_fast():
    sql_execution_reward([FR], FR)  # warm the reference cache, as in training
    times = []
    for _ in range(15):
        t0 = time.perf_counter()
        assert sql_execution_reward([FR + " ORDER BY name"], FR) == [1.0]
        times.append(time.perf_counter() - t0)
    assert statistics.median(times) < 0.1


TOKENS = ["SELECT", "name", "amount", "*", "FROM", "users", "orders", "WHERE", "country", "=", "'FR'",
          "1", ",", "(", ")", ";", "--", "'", "UNION ALL", "WITH RECURSIVE", "DROP TABLE", "DELETE",
          "ATTACH", "PRAGMA", "printf(", "zeroblob(", "\x00", "é", "\n"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300), st.lists(st.sampled_from(TOKENS), max_size=25).map(" ".join)))
def test_fuzz_never_raises(text):
    before = sha256(DB_PATH)
    strong = sql_execution_reward([text], FR, timeout_s=0.5)
    weak = sql_syntax_reward([text])
    assert strong in ([0.0], [1.0]) and weak in ([0.0], [1.0])
    assert sha256(DB_PATH) == before


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=25).map(" ".join))
def test_fuzz_weak_passes_whatever_strong_passes(text):
    # a query that returns the right rows also compiles
    if sql_execution_reward([text], FR, timeout_s=0.5) == [1.0]:
        assert sql_syntax_reward([text]) == [1.0]


# --- the database build -----------------------------------------------------------------------------

def test_build_database_is_deterministic(tmp_path):
    a, b = build_database(tmp_path / "a.db"), build_database(tmp_path / "b.db")
    assert sorted(os.listdir(tmp_path)) == ["a.db", "b.db"]  # no temp or journal file left
    with open(a, "rb") as fa, open(b, "rb") as fb, open(DB_PATH, "rb") as fs:
        built, again, shipped = fa.read(), fb.read(), fs.read()
    assert built == again
    # the shipped file is the same, but for the writing SQLite's version number (header bytes 96-99)
    assert len(built) == len(shipped) and built[:96] + built[100:] == shipped[:96] + shipped[100:]
    assert len(run_readonly("SELECT * FROM users", db_path=a)[0]) == len(USERS)
    assert len(run_readonly("SELECT * FROM orders", db_path=a)[0]) == len(ORDERS)

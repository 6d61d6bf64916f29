"""utils.verifiers.sql: multiset judging, the labelled adversarial suite, the sandbox (the DB is
never changed, attacks end in time), the worker process (replaced after a kill, memory-capped, gone
at exit), robustness, speed, and the database build's determinism."""
import glob
import hashlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utils import ROOT
from utils.verifiers import isolation
from utils.verifiers.isolation import WALLS, available_walls, readable_by, sandbox_config
from utils.verifiers.sql import (
    COPY_PREFIX,
    DB_PATH,
    MAX_SQL_CHARS,
    ORDERS,
    REAPER_TAG,
    USERS,
    build_database,
    load_sql_suite,
    run_readonly,
    shutdown_worker,
    sql_compiles,
    sql_execution_reward,
    sql_syntax_reward,
)
from utils.verifiers.sql_worker import MEM_MB

SUITE = load_sql_suite()
FR = "SELECT name FROM users WHERE country = 'FR'"  # rows: Alice, Bruno, Alice, Chloé
TIMEOUT_S = 2.0
STALLS = [c for c in SUITE if c.get("attack") == "sql_stall"]
STALL = {c["id"].split("/stall_")[1]: c["candidate"] for c in STALLS}
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


def test_the_reference_is_asked_again_when_the_database_changes(tmp_path):
    """Reference rows are cached per database version: after the file changes, the reference query itself
    still scores 1.0 (it scored 0 when the cache was keyed by path alone)."""
    import sqlite3
    db = tmp_path / "shop.db"
    shutil.copy(DB_PATH, db)
    count = "SELECT COUNT(*) FROM users"
    assert execution(count, count, db_path=db) == 1.0
    with sqlite3.connect(db) as con:  # our own SQL, on our own copy
        con.execute("INSERT INTO users SELECT * FROM users LIMIT 0")
        con.execute("DELETE FROM users WHERE id = 1")
    os.utime(db, ns=(time.time_ns(), time.time_ns() + 10**9))  # a new mtime even on a coarse clock
    assert execution(count, count, db_path=db) == 1.0
    assert execution("SELECT COUNT(*) + 1 FROM users", count, db_path=db) == 0.0
    shutdown_worker()


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
        assert set(c) - {"attack"} == {"id", "kind", "question", "reference_sql", "candidate", "label"}
        assert c["label"] in (0.0, 1.0) and c.get("attack") in (None, "sql_stall")
    assert KINDS_REQUIRED <= {c["kind"] for c in SUITE}
    assert sum(c["label"] for c in SUITE) >= 10  # right answers written differently, not just attacks
    assert any(len(c["candidate"]) > MAX_SQL_CHARS for c in SUITE)
    assert any(not c["candidate"].isascii() for c in SUITE)
    # attacks on the time and memory caps, several of each kind, all wrong answers
    stall_kinds = [c["kind"] for c in STALLS]
    for kind in ["prepare_blowup", "slow_function_calls", "function_chain", "temp_spill", "planner_bomb"]:
        assert stall_kinds.count(kind) >= 2, kind
    assert all(c["label"] == 0.0 and len(c["candidate"]) <= MAX_SQL_CHARS for c in STALLS)


@pytest.fixture(scope="module")
def judged():
    """Every suite case judged once by both verifiers, with their times and the DB state after it.
    The workers are started first: finding the wall and starting a process is a one-off cost."""
    before = db_state()
    attack_files_before = {p: os.path.exists(p) for p in ATTACK_FILES}
    sql_execution_reward([FR], [FR]), sql_syntax_reward([FR])
    out = {}
    for c in SUITE:
        t0 = time.perf_counter()
        strong = sql_execution_reward([c["candidate"]], [c["reference_sql"]], timeout_s=TIMEOUT_S)
        t1 = time.perf_counter()
        weak = sql_syntax_reward([c["candidate"]], reference_sql=[c["reference_sql"]], timeout_s=TIMEOUT_S)
        out[c["id"]] = {"strong": strong[0], "weak": weak[0], "seconds": t1 - t0,
                        "weak_seconds": time.perf_counter() - t1, "state": db_state()}
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
    """Both verifiers, every case, the stalls included: within the cap + 0.5 s."""
    _, _, out = judged
    slow = {(cid, which): round(r[which], 2) for cid, r in out.items()
            for which in ("seconds", "weak_seconds") if r[which] > TIMEOUT_S + 0.5}
    assert slow == {}


def test_timeout_is_wall_clock_and_configurable():
    runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c"
    t0 = time.perf_counter()
    rows, err = run_readonly(runaway, timeout_s=0.3)
    assert rows is None and "timed out" in err   # the worker's own deadline says so, as the parent's does
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
    # numbers and NULLs count too: 9,000 rows of 64 numbers, no text at all, is as long to send and decode
    cols = ", ".join(["x * 1234567.891"] * 64)
    numbers = f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 9000) SELECT {cols} FROM c"
    t = time.perf_counter()
    assert run_readonly(numbers) == (None, "result too large")
    assert time.perf_counter() - t < 2.0 + 0.5   # the whole call, decoding included, within cap + 0.5 s
    nulls = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 9000) SELECT NULL FROM c"
    assert len(run_readonly(nulls)[0]) == 9000   # small: 9,000 short rows are fine


def test_a_worker_that_stops_reading_cannot_hold_a_call():
    """The request's write is bounded by the call's deadline too: a worker whose input pipe is full (it
    stopped reading) costs the call its deadline, not forever."""
    from utils.verifiers.sql import _Worker
    w = _Worker.__new__(_Worker)
    w.proc = subprocess.Popen(["sleep", "30"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        import select
        w.replies, w.writable = select.poll(), select.poll()
        w.replies.register(w.proc.stdout, select.POLLIN)
        w.writable.register(w.proc.stdin, select.POLLOUT)
        os.set_blocking(w.proc.stdin.fileno(), False)
        try:
            while True:
                os.write(w.proc.stdin.fileno(), b"x" * 65536)   # fill the pipe: nobody reads it
        except BlockingIOError:
            pass
        t = time.perf_counter()
        with pytest.raises(TimeoutError):
            w.ask(b'{"op": "compile", "sql": "SELECT 1"}\n', time.monotonic() + 0.3)
        assert 0.25 < time.perf_counter() - t < 1.0
    finally:
        w.proc.kill()
        w.proc.wait()


def test_a_reply_is_bounded_as_it_is_read():
    """The parent counts a reply's separators as they arrive (issue 60): a reply within MAX_REPLY_BYTES that holds
    more values than MAX_RESULT_VALUES is garbage, refused before it is decoded."""
    import select

    from utils.verifiers.sql import MAX_REPLY_BYTES, MAX_RESULT_VALUES, _Worker
    n = 3 * MAX_RESULT_VALUES
    assert len('{"rows": [[' + "0," * n + '0]]}') < MAX_REPLY_BYTES
    w = _Worker.__new__(_Worker)
    w.proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline(); "
                               f"print('{{\"rows\": [[' + '0,' * {n} + '0]]}}', flush=True)"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        w.replies, w.writable = select.poll(), select.poll()
        w.replies.register(w.proc.stdout, select.POLLIN)
        w.writable.register(w.proc.stdin, select.POLLOUT)
        with pytest.raises(ValueError, match="reply too long"):
            w.ask(b'{"op": "run"}\n', time.monotonic() + 10)
    finally:
        w.proc.kill()
        w.proc.wait()


def test_the_largest_results_cost_little_to_decode():
    """Decoding comes after the reply's deadline, so a result's size is capped in values too (issue 60): at the
    caps, or just past them, a whole call, worker and decoding, takes well under MARGIN_S (the 0.25 s of the cap +
    0.5 s left after the worker's deadline). Before the value cap, 10,000 rows of 64 zeros (640,000 values) were
    sent and took about 0.9 s."""
    from utils.verifiers.sql import MARGIN_S, MAX_RESULT_VALUES
    rows = lambda n, select: f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT {n}) " \
        f"SELECT {select} FROM c"   # noqa: E731
    zeros = ", ".join(["0"] * 64)
    run_readonly("SELECT 1")
    for q, n in [(rows(MAX_RESULT_VALUES // 64, zeros), MAX_RESULT_VALUES // 64), (rows(10_000, zeros), None),
                 (rows(9_999, "x, x * 1.5, random(), NULL, 'abc'"), 9_999)]:
        t = time.perf_counter()
        got, err = run_readonly(q)
        seconds = time.perf_counter() - t
        assert (len(got) if got else None) == n and (n or err == "result too large"), (q[-40:], err)
        assert seconds < MARGIN_S, (q[-40:], seconds)


def test_a_reference_stopped_at_its_deadline_is_not_cached(monkeypatch):
    """A reference query the worker stops at its own deadline ("timed out", not a SQL error: issue 60) is not the
    reference's answer: the call scores 0.0, nothing is cached, and the next call, with time enough, computes it and
    pays a right candidate. Before, the worker's "interrupted" was cached as "no reference" until the trainer
    restarted."""
    import utils.verifiers.sql as sv
    slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 1500000) SELECT count(*) FROM c"
    right = "SELECT 1500000"
    sv._reference_rows.cache_clear()
    monkeypatch.setattr(sv, "REFERENCE_TIMEOUT_S", 0.05)   # the parent waits 0.05 + MARGIN_S: the worker stops first
    rows, err, transient = sv._query(slow, DB_PATH, 0.05)
    assert rows is None and err.startswith("timed out") and transient
    assert execution(right, slow) == 0.0
    assert sv._reference_rows.cache_info().currsize == 0
    monkeypatch.setattr(sv, "REFERENCE_TIMEOUT_S", 10.0)
    assert execution(right, slow) == 1.0 and execution("SELECT 1", slow) == 0.0
    assert sv._reference_rows.cache_info().currsize == 1
    assert execution(right, "SELEC 1") == 0.0 and sv._reference_rows.cache_info().currsize == 2  # its own error: kept


def test_run_readonly_errors_instead_of_raising(tmp_path):
    assert run_readonly(None)[0] is None and run_readonly(b"SELECT 1")[0] is None
    assert "longer than" in run_readonly("SELECT 1" + " " * MAX_SQL_CHARS)[1]
    assert run_readonly("DROP TABLE users")[1] is not None
    missing = tmp_path / "missing.db"
    rows, err = run_readonly("SELECT 1", db_path=missing)
    assert rows is None and err and not missing.exists()  # read-only open does not create it


# --- the worker process --------------------------------------------------------------------------

def worker_pythons():
    """The worker interpreters, as host processes: our descendants running `python -I -S -c`
    (not a child forked to start one, which is this process until it execs)."""
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if "python" in p.name() and p.cmdline()[1:3] == ["-I", "-S"] and REAPER_TAG not in " ".join(p.cmdline()):
                out.append(p)
        except psutil.Error:  # gone meanwhile
            pass
    return out


def alive(pids, wait_s=1.0):
    """The pids still running (zombies are dead) after up to wait_s: the wall's inner processes
    die a moment after the worker's group is killed (die-with-parent), not at once."""
    deadline = time.monotonic() + wait_s
    while True:
        out = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    out.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not out or time.monotonic() > deadline:
            return out
        time.sleep(0.01)


def peak_while(fn):
    """(fn(), seconds, the highest VmHWM in MB of any worker while fn ran), VmHWM polled every ms."""
    out, peak = {}, 0.0
    def go():
        t0 = time.perf_counter()
        out["result"] = fn()
        out["seconds"] = time.perf_counter() - t0
    thread = threading.Thread(target=go)
    thread.start()
    while thread.is_alive():
        for p in worker_pythons():
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    hwm = next(line for line in f if line.startswith("VmHWM:"))
                peak = max(peak, int(hwm.split()[1]) / 1024)
            except (OSError, StopIteration):  # gone between listing and reading
                pass
        time.sleep(0.001)
    thread.join()
    return out["result"], out["seconds"], peak


def test_values_round_trip_exactly():
    """Rows cross the pipe as JSON: bytes, big ints, inf, -0.0, NULL and text come back as sqlite3 gives them."""
    sql = ("SELECT x'00ff', 9223372036854775807, -9223372036854775808, 1e999, -1e999, -0.0, 0.1, NULL, "
           "'é\U0001f642', '', x''")
    rows, err = run_readonly(sql)
    assert err is None and rows == [(b"\x00\xff", 2**63 - 1, -2**63, float("inf"), float("-inf"), -0.0, 0.1,
                                     None, "é\U0001f642", "", b"")]
    assert str(rows[0][5]) == "-0.0"
    nan = run_readonly("SELECT abs(1e999) - abs(1e999)")[0]  # NaN: SQLite returns it as NULL
    assert nan == [(None,)]


def test_worker_is_replaced_after_a_kill_and_still_judges():
    sql_execution_reward([FR], FR)
    before = {p.pid for p in worker_pythons()}
    t0 = time.perf_counter()
    rows, err = run_readonly(STALL["like_storm_or"], timeout_s=0.5)  # one op takes ~3 ms: past the deadline
    assert (rows, err) == (None, "timed out") and time.perf_counter() - t0 < 0.5 + 0.5
    assert len(alive(before, wait_s=0.2)) == len(before) - 1  # the run worker is gone, not the compile one
    assert execution(FR) == 1.0 and execution("SELECT name FROM users") == 0.0
    assert len({p.pid for p in worker_pythons()} - before) == 1  # a fresh one judged them
    # the weak verifier's worker too: a planner bomb takes seconds to compile
    t0 = time.perf_counter()
    assert sql_syntax_reward([STALL["planner_bomb_a"]], timeout_s=0.3) == [0.0]
    assert time.perf_counter() - t0 < 0.3 + 0.5
    assert sql_syntax_reward([FR, "SELEC x"]) == [1.0, 0.0]


def test_a_dead_worker_costs_one_call():
    """Killed from outside (the OOM killer, say): that call gets an error, the next a fresh worker."""
    assert execution(FR) == 1.0
    for p in worker_pythons():
        p.kill()
    alive([p.pid for p in worker_pythons()])
    rows, err = run_readonly(FR)
    assert rows is None and err.startswith("worker died")
    assert sql_syntax_reward([FR]) == [0.0]  # the compile worker was killed too
    assert execution(FR) == 1.0 and sql_syntax_reward([FR]) == [1.0]


def test_shutdown_leaves_no_process_behind():
    execution(FR), sql_syntax_reward([FR])
    started = [p.pid for p in psutil.Process().children(recursive=True)
               if REAPER_TAG not in " ".join(p.cmdline())]   # the copies' reaper lives as long as we do
    assert started
    shutdown_worker()
    assert alive(started) == []
    assert execution(FR) == 1.0  # and the next call starts a fresh one


def test_worker_started_in_a_short_thread_outlives_it():
    """The wall kills the worker when the thread that started it ends (pdeathsig): a thread pool's
    thread starting it must not leave every later call a dead worker."""
    shutdown_worker()
    thread = threading.Thread(target=execution, args=(FR,))
    thread.start()
    thread.join()
    pids = [p.pid for p in worker_pythons()]
    time.sleep(0.1)
    assert pids and alive(pids, wait_s=0) == pids
    assert execution(FR) == 1.0 and [p.pid for p in worker_pythons()] == pids


def test_no_process_left_behind_at_exit():
    """A program that judges, then exits without calling anything: atexit kills its workers."""
    code = ("import psutil; from utils.verifiers.sql import run_readonly, sql_compiles; "
            "assert run_readonly('SELECT 1')[0] == [(1,)] and sql_compiles('SELECT 1') == 1.0; "
            "print([p.pid for p in psutil.Process().children(recursive=True)])")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    pids = json.loads(r.stdout)
    assert r.returncode == 0 and pids
    assert alive(pids) == []


def test_worker_memory_is_capped_on_the_worst_attack():
    """The chain of inlined CTEs took 3.3 GB in-process; the worker's peak stays under MEM_MB."""
    shutdown_worker()  # a fresh worker: VmHWM is over its life
    (rows, err), seconds, peak = peak_while(lambda: run_readonly(STALL["cte_chain_13x3"], timeout_s=TIMEOUT_S))
    assert rows is None and seconds < TIMEOUT_S + 0.5
    assert 0 < peak <= MEM_MB, peak
    if sandbox_config()["rlimits"]:
        (worker,) = [p for p in worker_pythons()]
        with open(f"/proc/{worker.pid}/limits") as f:
            limit = next(line for line in f if line.startswith("Max address space")).split()[3]
        assert int(limit) == MEM_MB << 20
    shutdown_worker()
    score, seconds, peak = peak_while(lambda: sql_compiles(STALL["cte_chain_13x3"]))
    assert score == 0.0 and seconds < TIMEOUT_S + 0.5 and 0 < peak <= MEM_MB


def test_throughput_on_correct_candidates():
    """The strong verifier judges >= 500 right answers a second (median of 5 runs)."""
    good = [c for c in SUITE if c["label"] == 1.0]
    cands, refs = [c["candidate"] for c in good], [c["reference_sql"] for c in good]
    assert sql_execution_reward(cands, refs) == [1.0] * len(good)
    rates = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(20):
            sql_execution_reward(cands, refs)
        rates.append(20 * len(good) / (time.perf_counter() - t0))
    assert statistics.median(rates) >= 500, rates


@pytest.mark.parametrize("wall", WALLS)
def test_database_in_a_private_folder(wall, monkeypatch):
    """Where the wall's user may not reach the file (root drops the worker to nobody), it judges a readable copy,
    and the next copy sweeps a dead process's. Per wall, as a trainer with only that wall sees it; where the wall's
    user reads the file itself (it runs as our own user), nothing is copied: skipped, saying so."""
    walls = available_walls()
    if wall not in walls:
        pytest.skip(f"no {wall} wall here (this machine has {list(walls)})")
    monkeypatch.setattr(isolation, "_CONFIG", {wall: walls[wall]})   # this wall only
    folder = tempfile.mkdtemp()
    try:
        os.chmod(folder, 0o700)
        db = build_database(os.path.join(folder, "shop.db"))
        if readable_by(walls[wall]["uid"], db):
            pytest.skip(f"behind the {wall} wall the worker runs as our own user (uid {walls[wall]['uid']}): it reads "
                        "the database itself, so nothing is copied")
        stale = tempfile.mkdtemp(prefix="rlvr_sql_99999999_")   # a killed trainer's copy (no such process)
        assert run_readonly("SELECT count(*) FROM users", db_path=db) == ([(len(USERS),)], None)
        assert sorted(os.listdir(folder)) == ["shop.db"]
        assert not os.path.exists(stale)                     # swept when the next copy was made
        if os.geteuid() == 0 and wall == "isolated":  # the copy is bound into the worker's
            mine = glob.glob(os.path.join(tempfile.gettempdir(), f"rlvr_sql_{os.getpid()}_*"))  # world: its
            assert [f for d in mine for _, _, files in os.walk(d) for f in files] == []       # host name is gone
    finally:
        shutdown_worker()   # its workers ran behind this wall only
        shutil.rmtree(folder)


TRAINER = """import json, sys, time
sys.path.insert(0, sys.argv[1])
import psutil
from utils.verifiers import isolation, sql
walls = isolation.available_walls()
isolation._CONFIG = {sys.argv[2]: walls[sys.argv[2]]}   # this wall only
assert sql.run_readonly("SELECT count(*) FROM users", db_path=sys.argv[3]) == ([(20,)], None)
print(json.dumps([p.pid for p in psutil.Process().children(recursive=True)]), flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("wall", WALLS)
def test_a_killed_trainer_leaves_no_copy(wall, tmp_path):
    """A trainer judging on a database its wall's user cannot read (a private folder; root drops the worker to
    nobody) gets a copy, which goes to tempfile.gettempdir()/rlvr_sql_<its pid>_<random>/ and nowhere else.
    SIGKILLed there, it leaves nothing: no copy folder, no worker, no reaper."""
    walls = available_walls()
    if wall not in walls:
        pytest.skip(f"no {wall} wall here (this machine has {list(walls)})")
    folder = tmp_path / "private"
    folder.mkdir()
    os.chmod(folder, 0o700)
    db = build_database(str(folder / "shop.db"))
    if readable_by(walls[wall]["uid"], db):
        pytest.skip(f"behind the {wall} wall the worker runs as our own user (uid {walls[wall]['uid']}): it reads "
                    "the database itself, so nothing is copied")
    trainer = subprocess.Popen([sys.executable, "-c", TRAINER, ROOT, wall, db], stdout=subprocess.PIPE, cwd=ROOT)
    copies = os.path.join(tempfile.gettempdir(), f"{COPY_PREFIX}{trainer.pid}_*")
    try:
        started = json.loads(trainer.stdout.readline())
        (made,) = glob.glob(copies)                     # the one folder its copies go to, while it runs
        inside = [f for _, _, files in os.walk(made) for f in files]
        # behind the isolated wall the copy's host name goes once the worker answers (bound in, it stays there)
        assert inside == ([] if wall == "isolated" else ["shop.db"]), inside
        assert len(started) >= 2, started               # the reaper and the worker (with its wall's processes)
    finally:
        trainer.send_signal(signal.SIGKILL)
        trainer.wait()
        trainer.stdout.close()
    deadline = time.monotonic() + 5
    while glob.glob(copies) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert glob.glob(copies) == []
    assert alive(started, wait_s=5) == []
    assert sorted(os.listdir(folder)) == ["shop.db"]


def test_a_killed_reaper_is_replaced():
    """The copies' reaper killed (it cannot clean up then): the next copy gets a fresh folder and a fresh
    reaper, and the old folder is removed."""
    from utils.verifiers import sql as sv
    first = sv._copies_folder()
    assert sv._copies_folder() == first                 # one folder per process
    reaper = sv._REAPER[2]
    reaper.kill()
    reaper.wait()
    second = sv._copies_folder()
    assert second != first and not os.path.exists(first) and os.path.isdir(second)
    assert sv._REAPER[2].poll() is None and REAPER_TAG in " ".join(psutil.Process(sv._REAPER[2].pid).cmdline())


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

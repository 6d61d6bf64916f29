"""SQL verifiers (Lab 02): a weak one that checks form, a strong one that checks results.

The task: answer a question about a small shop database with one SQLite query. Two verifiers,
in TRL's reward signature, judge the candidate query:

- sql_syntax_reward (weak): 1.0 iff the text is one statement that compiles against the schema.
  It never looks at the answer, so `SELECT * FROM users WHERE 1=1` and `DROP TABLE users` pass.
- sql_execution_reward (strong): 1.0 iff the candidate, run read-only on the shipped database,
  returns the reference query's rows as a multiset: row order is free, duplicates count, column
  order counts, column names do not, and 150 equals 150.0 (Python equality).

Candidates are untrusted text, and SQLite's own guards do not bound everything: its progress
handler never fires while a statement is prepared (a chain of inlined CTEs took 1 GB before a row)
or inside one function call, and sorts spill to temp files. So every query, the weak check's and the
reference's too, runs in a separate worker process (sql_worker.py) behind the strongest wall of
isolation.py, capped at MEM_MB of memory and no file writes, the database opened read-only with
SQLite's authorizer allowing reads only, and text, rows and result size capped (its length and its number
of values, so that decoding it is bounded too). The parent waits timeout_s + MARGIN_S for a reply, then kills
the worker's process group and starts a fresh one on the next call: a call ends within timeout_s + 0.5 s,
decoding included. The worker is reused across calls (~0.5 ms a judgment), one per database file.
Where the wall's user cannot read the database (root drops the worker to nobody; the file in a private
folder), the worker gets a copy, in tempfile.gettempdir()/rlvr_sql_<pid>_<random>/ and nowhere else: a
reaper process removes that folder when the process that made it ends, SIGKILL included (_copies_folder).
A verifier never raises: anything it cannot judge scores 0.0. `python -m utils.verifiers.sql`
rebuilds the DB.
"""
import atexit
import functools
import glob
import json
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from utils import DATA_DIR, checks
from utils.verifiers.cgroups import dead
from utils.verifiers.isolation import launch, readable_by, sandbox_config
from utils.verifiers.signature import per_completion

DB_PATH = os.path.join(DATA_DIR, "sql", "shop.db")
SUITE_PATH = os.path.join(DATA_DIR, "sql", "adversarial.jsonl")
MAX_SQL_CHARS = 10_000          # longer candidates are rejected unread
MAX_VALUE_BYTES = 10_000        # longest string or blob a query may build (SQLITE_LIMIT_LENGTH)
# a result's size as sent back: its length (sql_worker.json_size: every value counted) and its number of values.
# Decoding is part of a call and comes after the reply's deadline, so these bound it: the worst reply (50,000
# values; 1 MB of text) decodes in well under the MARGIN_S the cap leaves (tests/test_sql_verifier.py measures it)
MAX_RESULT_CHARS = 1_000_000
MAX_RESULT_VALUES = 50_000
MAX_REPLY_BYTES = 2 * MAX_RESULT_CHARS + 64   # a longer reply, or one with more values, is garbage: worker replaced
MARGIN_S = 0.25                 # the parent waits timeout_s + this for a reply, then kills the worker
MAX_WORKERS = 4                 # live workers (one per database file, one for compiling)
_WORKER_SOURCE = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sql_worker.py"),
                      encoding="utf-8").read()
_WORKERS = {}                   # database key (None: compile only) -> _Worker
_LOCK = threading.Lock()        # one request at a time over the pipes
_SPAWNER = (None, None)         # (pid, the one-thread executor that starts workers)

SCHEMA = """\
CREATE TABLE users (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,        -- not unique: two users may share a name
    country     TEXT NOT NULL,        -- 'FR', 'DE', 'ES', 'IT', 'SE'
    signup_year INTEGER NOT NULL
);
CREATE TABLE orders (
    id      INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    product TEXT NOT NULL,
    amount  INTEGER NOT NULL,         -- whole euros
    year    INTEGER NOT NULL
);
"""

# (name, country, signup_year); ids are 1, 2, ... Two Alices in FR and two Emmas in DE.
USERS = [
    ("Alice", "FR", 2021), ("Bruno", "FR", 2022), ("Alice", "FR", 2023), ("Chloé", "FR", 2022),
    ("Daniel", "DE", 2021), ("Emma", "DE", 2023), ("Felix", "DE", 2022), ("Greta", "DE", 2021),
    ("Hugo", "ES", 2023), ("Inés", "ES", 2022), ("Javier", "ES", 2021), ("Karl", "DE", 2023),
    ("Lucía", "ES", 2022), ("Marco", "IT", 2021), ("Nina", "IT", 2023), ("Oscar", "IT", 2022),
    ("Paula", "ES", 2023), ("Emma", "DE", 2022), ("Rosa", "IT", 2021), ("Sven", "SE", 2022),
]
# (user_id, product, amount, year); ids are 1, 2, ... Greta, Paula and Sven never ordered.
ORDERS = [
    (1, "book", 12, 2022), (1, "lamp", 35, 2023), (2, "book", 12, 2023), (2, "book", 12, 2023),
    (2, "mug", 8, 2022), (3, "chair", 60, 2023), (4, "desk", 150, 2021), (4, "pen", 3, 2023),
    (5, "mug", 8, 2021), (5, "book", 12, 2022), (6, "lamp", 35, 2023), (6, "lamp", 35, 2023),
    (7, "desk", 150, 2022), (7, "pen", 3, 2021), (9, "chair", 60, 2023), (9, "mug", 8, 2023),
    (10, "book", 12, 2022), (10, "pen", 3, 2022), (11, "desk", 150, 2021), (11, "lamp", 35, 2022),
    (12, "mug", 8, 2023), (13, "chair", 60, 2022), (13, "book", 12, 2023), (14, "pen", 3, 2021),
    (14, "desk", 150, 2023), (15, "lamp", 35, 2023), (15, "mug", 8, 2022), (16, "book", 12, 2022),
    (16, "chair", 60, 2021), (18, "pen", 3, 2022), (18, "book", 12, 2023), (19, "mug", 8, 2021),
    (19, "lamp", 35, 2022), (1, "mug", 8, 2023), (3, "pen", 3, 2022), (5, "chair", 60, 2023),
    (6, "pen", 3, 2022), (9, "book", 12, 2021), (12, "desk", 150, 2022), (16, "mug", 8, 2023),
]

def build_database(path=DB_PATH):
    """Write the shop database to `path`, byte-identical on every run with the same SQLite:
    fixed rows, one process, no timestamps; written to a temp file, then moved into place."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp)
        try:
            conn.executescript(SCHEMA)
            conn.executemany("INSERT INTO users VALUES (?, ?, ?, ?)",
                             [(i, *u) for i, u in enumerate(USERS, 1)])
            conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
                             [(i, *o) for i, o in enumerate(ORDERS, 1)])
            conn.commit()
        finally:
            conn.close()
        os.chmod(tmp, 0o644)  # mkstemp makes it private
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def _decode(d):
    """json object_hook: {"b": hex} back to bytes (a BLOB); other objects stay dicts."""
    return bytes.fromhex(d["b"]) if set(d) == {"b"} else d


class _Worker:
    """One sql_worker.py process behind the wall, for one database file (db: its real path) or for
    compiling only (db None). Behind the isolated wall it sees no host file but the db, bound
    read-only at /db/<name>; the other walls see host paths. Where the wall's user (nobody, when we
    are root) cannot reach the file (a private folder such as /root), it gets a readable copy, in the
    folder _copies_folder() gives: removed when the worker is killed, and by the reaper when this process
    ends, however it ends."""

    def __init__(self, db):
        cfg = sandbox_config()
        self.copy = None
        if db is not None and not readable_by(cfg["uid"], db):
            _sweep_copies()
            self.copy = tempfile.mkdtemp(dir=_copies_folder())
            os.chmod(self.copy, 0o755)
            db = shutil.copy(db, self.copy)
            os.chmod(db, 0o444)
        inside, binds = db, []
        if db is not None and cfg["wall"] == "isolated":
            inside = "/db/" + os.path.basename(db)
            binds = [(db, inside)]
        conf = dict(db=inside, schema=SCHEMA, rlimits=bool(cfg["rlimits"]), max_sql_chars=MAX_SQL_CHARS,
                    max_value_bytes=MAX_VALUE_BYTES, max_result_chars=MAX_RESULT_CHARS,
                    max_result_values=MAX_RESULT_VALUES)
        self.owner = os.getpid()  # a forked child must not share this process's pipes
        try:
            with launch(cfg, cfg["python"], binds) as (prefix, fds, _):
                self.proc = subprocess.Popen(prefix + [cfg["python"], "-I", "-S", "-c", _WORKER_SOURCE,
                                                       json.dumps(conf)],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                             env={}, cwd="/", close_fds=True, pass_fds=fds, start_new_session=True)
        except OSError:
            if self.copy:
                shutil.rmtree(self.copy, ignore_errors=True)
            raise
        self.replies = select.poll()  # poll, not select: a big training process may hold fds > 1024
        self.replies.register(self.proc.stdout, select.POLLIN)
        self.writable = select.poll()
        self.writable.register(self.proc.stdin, select.POLLOUT)
        if self.copy and cfg["wall"] == "isolated":
            # the copy is bound into the worker's world: once it answers, the host's name can go, so
            # nothing of it outlives this process, however it ends (the bind keeps the file inside)
            try:
                self.ask(json.dumps({"op": "compile", "sql": ""}).encode() + b"\n", time.monotonic() + 20)
            except Exception:
                self.kill()
                raise
            shutil.rmtree(self.copy, ignore_errors=True)
            self.copy = None

    def ask(self, line, deadline):
        """Send one request line and wait for its one-line reply, both until `deadline` (time.monotonic()).
        Returns the reply, or raises TimeoutError, EOFError (the worker died) or ValueError (garbage, or a
        reply longer than MAX_REPLY_BYTES or with more separators than MAX_RESULT_VALUES values need: what
        decoding it costs is bounded as it is read)."""
        out = self.proc.stdin.fileno()
        os.set_blocking(out, False)
        while line:  # a worker that stopped reading cannot hold us past the deadline
            left = deadline - time.monotonic()
            if left <= 0 or not self.writable.poll(1000 * left):
                raise TimeoutError
            line = line[os.write(out, line):]
        fd, chunks, size, commas = self.proc.stdout.fileno(), [], 0, 0
        while not chunks or not chunks[-1].endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not self.replies.poll(1000 * left):
                raise TimeoutError
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            size, commas = size + len(chunk), commas + chunk.count(b",")  # a comma after each value, each row
            if size > MAX_REPLY_BYTES or commas > 2 * MAX_RESULT_VALUES + 16:
                raise ValueError("reply too long")
        reply = json.loads(b"".join(chunks), object_hook=_decode)
        if not isinstance(reply, dict):
            raise ValueError("not a reply")
        return reply

    def why_dead(self):
        """The last line the worker wrote to stderr (bwrap's complaint, a traceback), once it is dead."""
        if self.proc.poll() is None:
            return ""
        os.set_blocking(self.proc.stderr.fileno(), False)
        try:
            lines = os.read(self.proc.stderr.fileno(), 1 << 16).decode(errors="replace").strip().splitlines()
        except BlockingIOError:  # nothing written
            return ""
        return ": " + lines[-1] if lines else ""

    def kill(self):
        """SIGKILL the worker's process group (its wall's processes die with it), reap it."""
        if self.owner != os.getpid():
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:  # already gone
            pass
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                pipe.close()
            except OSError:  # stdin's unsent bytes: a broken pipe
                pass
        if self.copy:
            shutil.rmtree(self.copy, ignore_errors=True)


COPY_PREFIX = "rlvr_sql_"
REAPER_TAG = "rlvr-sql-copies-reaper"
# Trusted, our own code, run as `python -I -S -c REAPER <pid> <temp folder> <prefix>` by the process `pid` (not
# behind a wall: it removes what that process made). It makes the folder the copies go to, prints its name,
# and removes it when that process ends: its pipe (stdin) reaches end of file, or its parent changes.
REAPER = "# " + REAPER_TAG + """
import os, select, shutil, sys, tempfile
trainer = int(sys.argv[1])
folder = tempfile.mkdtemp(dir=sys.argv[2], prefix=sys.argv[3])
try:
    os.chmod(folder, 0o755)
    os.write(1, (folder + "\\n").encode())
    os.close(1)
    watch = select.poll()
    watch.register(0, select.POLLIN)
    while os.getppid() == trainer:  # a fork of the trainer may hold the pipe too: the parent id says it ended
        if watch.poll(1000) and not os.read(0, 4096):
            break
finally:
    shutil.rmtree(folder, ignore_errors=True)
"""
_REAPER = (None, None, None)   # (pid, the folder its copies go to, the reaper's Popen)


def _copies_folder():
    """The folder this process's database copies go to, tempfile.gettempdir()/rlvr_sql_<pid>_<random>, made on
    first use by a reaper: a process of our own user, started in its own session, that removes the folder
    when this process ends, however it ends (SIGKILL included; a killed reaper's folder is removed here, or
    by _sweep_copies)."""
    global _REAPER
    pid, folder, reaper = _REAPER
    if pid == os.getpid() and reaper.poll() is None and os.path.isdir(folder):
        return folder
    if pid == os.getpid():  # its reaper was killed, or the folder removed
        os.close(reaper.pipe)
        shutil.rmtree(folder, ignore_errors=True)
    r, w = os.pipe()  # the write end is ours alone (not inheritable): it closes when we end
    try:
        reaper = subprocess.Popen([sys.executable, "-I", "-S", "-c", REAPER, str(os.getpid()), tempfile.gettempdir(),
                                   f"{COPY_PREFIX}{os.getpid()}_"], stdin=r, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env={}, cwd="/", close_fds=True, start_new_session=True)
    except OSError:
        os.close(w)
        raise
    finally:
        os.close(r)
    with reaper.stdout:
        folder = reaper.stdout.readline().decode().strip()
    if not folder or not os.path.isdir(folder):
        os.close(w)
        raise RuntimeError(f"the copies' reaper did not start (exit status {reaper.wait()})")
    reaper.pipe = w  # kept open for this process's life
    _REAPER = (os.getpid(), folder, reaper)
    return folder


def _sweep_copies():
    """Remove the database copies that a process which has since died left behind, if its reaper could not
    (the reaper killed too)."""
    for folder in glob.glob(os.path.join(tempfile.gettempdir(), COPY_PREFIX + "*_*")):
        if dead(os.path.basename(folder)[len(COPY_PREFIX):].split("_")[0]):
            shutil.rmtree(folder, ignore_errors=True)


def _ask(db, request, timeout_s):
    """`request`'s reply from the worker for `db` (started if needed), or {"err": why} after
    timeout_s + MARGIN_S, a death or garbage, when the worker is killed and replaced next call."""
    if os.name != "posix":
        raise RuntimeError("the SQL verifiers run each query in a killable child process, which needs a POSIX "
                           "system (Linux or macOS); on Windows, use WSL")
    if not 0 <= timeout_s < float("inf"):
        raise ValueError(f"timeout_s must be a finite number of seconds, not {timeout_s}")
    line = json.dumps(request).encode() + b"\n"  # before the lock: a bad request kills nothing
    with _LOCK:
        deadline = time.monotonic() + timeout_s + MARGIN_S
        key = db if db is None else (db, *_identity(db))  # a rebuilt file gets a fresh worker
        worker = _WORKERS.get(key)
        if worker is not None and worker.owner != os.getpid():  # inherited through fork: not ours
            del _WORKERS[key]
            worker = None
        if worker is None:
            if len(_WORKERS) >= MAX_WORKERS:
                _WORKERS.pop(next(iter(_WORKERS))).kill()
            try:
                worker = _WORKERS[key] = _spawn(db)
            except Exception as e:  # no interpreter, a wall that does not start, ...
                return {"err": f"worker did not start ({type(e).__name__}: {e})", "transient": True}
        try:
            reply = worker.ask(line, deadline)
        except TimeoutError:
            reply = {"err": "timed out", "retire": True, "transient": True}
        except (OSError, EOFError):  # a broken pipe: it died (or did not start: bwrap's complaint)
            time.sleep(0.01)  # let it finish dying
            reply = {"err": "worker died" + worker.why_dead(), "retire": True, "transient": True}
        except Exception as e:  # garbage on its stdout
            reply = {"err": f"worker sent garbage ({type(e).__name__})", "retire": True, "transient": True}
        if reply.get("retire") and _WORKERS.get(key) is worker:
            _WORKERS.pop(key).kill()
        return reply


def _spawn(db):
    """A new _Worker, started from a thread that lives as long as this process: the wall's
    parent-death signal (setpriv --pdeathsig) fires when the thread that started it ends, so a
    worker started from a short-lived thread (a thread pool's) would die with that thread."""
    global _SPAWNER
    if _SPAWNER[0] != os.getpid():  # none yet, or a forked child's copy without its thread
        _SPAWNER = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="sql-worker-spawner"))
    return _SPAWNER[1].submit(_Worker, db).result()


def _identity(path):
    """What changes when a database file is rebuilt or edited: device, inode, size, mtime."""
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def shutdown_worker():
    """Kill every worker this process started (registered with atexit: none is left behind)."""
    with _LOCK:
        while _WORKERS:
            _WORKERS.popitem()[1].kill()


atexit.register(shutdown_worker)


def _options(where, db_path, timeout_s):
    """(db_path, timeout_s) after checking, the caller's options (not the text judged): a path (NO_DB: none taken),
    and a finite number of seconds >= 0."""
    if db_path is not _NO_DB:
        db_path = checks.path(where, "db_path", db_path)
    return db_path, checks.number(where, "timeout_s", timeout_s, lo=0)


_NO_DB = object()


def run_readonly(sql, db_path=DB_PATH, timeout_s=2.0, max_rows=10_000):
    """Run one untrusted query on `db_path`, in the worker, without any way to change it.
    Returns (rows, None) or (None, error message) within timeout_s + 0.5 s, decoding included; never raises on
    the query (a missing database file is an error message too). A query stopped at timeout_s says "timed out".
    A bad db_path, timeout_s or max_rows is the caller's: a ValueError naming it."""
    db_path, timeout_s = _options("run_readonly", db_path, timeout_s)
    max_rows = checks.number("run_readonly", "max_rows", max_rows, lo=0, integer=True)
    return _query(sql, db_path, timeout_s, max_rows)[:2]


def _query(sql, db_path, timeout_s, max_rows=10_000):
    """run_readonly's work on checked options: (rows, None, False) or (None, error message, transient), transient
    True when the error says nothing about the query (it timed out; the worker died, did not start or sent
    garbage; memory ran out), so that another try may answer."""
    if not isinstance(sql, str):
        return None, "not a string", False
    if len(sql) > MAX_SQL_CHARS:
        return None, f"longer than {MAX_SQL_CHARS} characters", False
    try:
        db = os.path.realpath(db_path)
        if not os.path.isfile(db):  # not even bound: a read-only open must not create it
            return None, f"no database file at {db}", True
        reply = _ask(db, {"op": "run", "sql": sql, "timeout": float(timeout_s), "max_rows": int(max_rows)},
                     float(timeout_s))
        if "rows" in reply:
            return [tuple(row) for row in reply["rows"]], None, False
        return None, str(reply.get("err", "no rows")), bool(reply.get("transient"))
    except Exception as e:  # a bad path or timeout, a malformed reply, ...
        return None, f"{type(e).__name__}: {e}", True


def sql_compiles(text, timeout_s=2.0):
    """Weak check: 1.0 iff `text` is one statement that SQLite compiles against SCHEMA.
    It is compiled in the worker, in a throwaway in-memory database holding the schema and no rows,
    and stopped at its first step; statements that would write compile to no-ops (the authorizer
    answers IGNORE), so nothing runs and the shipped file is never opened. 0.0 past timeout_s."""
    timeout_s = _options("sql_compiles", _NO_DB, timeout_s)[1]
    if not isinstance(text, str) or len(text) > MAX_SQL_CHARS:
        return 0.0
    try:
        return 1.0 if _ask(None, {"op": "compile", "sql": text}, float(timeout_s)).get("score") == 1.0 else 0.0
    except Exception:  # a bad timeout, ...
        return 0.0


REFERENCE_TIMEOUT_S = 10.0   # a reference query's time (trusted, run once per database version)


@functools.lru_cache(maxsize=1024)
def _reference_rows(reference_sql, db_path, stamp):
    """The reference query's rows as a Counter (a multiset), or None if the query itself fails (an error in it,
    too many rows). Cached per database version (stamp: its file's mtime and size, so a changed database is asked
    again). Only what was computed is cached: a reference stopped at its deadline (the parent's or the worker's
    own), or a worker that died, did not start or ran out of memory, raises, so the next call asks again."""
    rows, err, transient = _query(reference_sql, db_path, REFERENCE_TIMEOUT_S)
    if rows is None and transient:
        raise RuntimeError(err)
    return None if rows is None else Counter(rows)


def sql_execution_match(text, reference_sql, db_path=DB_PATH, timeout_s=2.0):
    """Strong check: 1.0 iff `text` returns the reference query's rows as a multiset."""
    db_path, timeout_s = _options("sql_execution_match", db_path, timeout_s)
    try:
        st = os.stat(db_path)
        want = _reference_rows(reference_sql, os.fspath(db_path), (st.st_mtime_ns, st.st_size))
    except (TypeError, RuntimeError, OSError):  # an unhashable reference or path, a dead worker, no file
        return 0.0
    if want is None:
        return 0.0
    rows = _query(text, db_path, timeout_s)[0]
    return 1.0 if rows is not None and Counter(rows) == want else 0.0


def sql_syntax_reward(completions, timeout_s=2.0, **kwargs):
    """Weak verifier in TRL's signature: sql_compiles per completion (the answer is ignored)."""
    timeout_s = _options("sql_syntax_reward", _NO_DB, timeout_s)[1]
    return [sql_compiles(text, timeout_s) for (text,) in per_completion(completions)]


def sql_execution_reward(completions, reference_sql, db_path=DB_PATH, timeout_s=2.0, **kwargs):
    """Strong verifier in TRL's signature: sql_execution_match per completion. `reference_sql`
    is one query for all, or TRL's column (a list as long as completions; missing ones score 0)."""
    db_path, timeout_s = _options("sql_execution_reward", db_path, timeout_s)
    return [sql_execution_match(text, ref, db_path, timeout_s)
            for text, ref in per_completion(completions, reference_sql)]


def load_sql_suite(path=SUITE_PATH):
    """The labelled adversarial suite: dicts with id, kind, question, reference_sql, candidate,
    label (1.0: a right answer that must pass; 0.0: must fail)."""
    with open(checks.path("load_sql_suite", "path", path, "file"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


if __name__ == "__main__":
    p = build_database()
    print(f"wrote {p}: {len(USERS)} users, {len(ORDERS)} orders, {os.path.getsize(p)} bytes")

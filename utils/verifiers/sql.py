"""SQL verifiers (Lab 02): a weak one that checks form, a strong one that checks results.

The task: answer a question about a small shop database with one SQLite query. Two verifiers,
in TRL's reward signature, judge the candidate query:

- sql_syntax_reward (weak): 1.0 iff the text is one statement that compiles against the schema.
  It never looks at the answer, so `SELECT * FROM users WHERE 1=1` and `DROP TABLE users` pass.
- sql_execution_reward (strong): 1.0 iff the candidate, run read-only on the shipped database,
  returns the reference query's rows as a multiset: row order is free, duplicates count, column
  order counts, column names do not, and 150 equals 150.0 (Python equality).

Candidates are untrusted text. run_readonly opens the file read-only, lets SQLite's authorizer
allow reads only, stops a query by wall clock, and caps text, rows and result size. A verifier
never raises: anything it cannot judge scores 0.0. `python -m utils.verifiers.sql` rebuilds the DB.
"""
import functools
import json
import os
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path

from utils import DATA_DIR
from utils.verifiers.signature import per_completion

DB_PATH = os.path.join(DATA_DIR, "sql", "shop.db")
SUITE_PATH = os.path.join(DATA_DIR, "sql", "adversarial.jsonl")
MAX_SQL_CHARS = 10_000          # longer candidates are rejected unread
MAX_VALUE_BYTES = 10_000        # longest string or blob a query may build (SQLITE_LIMIT_LENGTH)
MAX_RESULT_CHARS = 4_000_000    # total str/bytes length of a result

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

# authorizer actions a plain query needs; everything else (writes, DDL, ATTACH, PRAGMA,
# transactions, table-valued functions such as json_each, ...) is refused
_READS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
_READS |= {getattr(sqlite3, "SQLITE_RECURSIVE", sqlite3.SQLITE_SELECT)}  # WITH RECURSIVE
# functions that can spin inside one call, out of the progress handler's reach:
# printf('%.*c', 2147483647, 'x') loops for seconds even though its result is capped
_REFUSED_FUNCTIONS = {"printf", "format"}


def _reads_only(refuse):
    """An authorizer that allows plain reads and answers `refuse` (DENY or IGNORE) otherwise."""
    def authorize(action, arg1, arg2, db_name, source):
        if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in _REFUSED_FUNCTIONS:
            return refuse
        return sqlite3.SQLITE_OK if action in _READS else refuse
    return authorize


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


def _limits(conn):
    """Cap what one statement may build: its text, its strings, columns, nesting, attachments."""
    for limit, value in [("SQLITE_LIMIT_SQL_LENGTH", 4 * MAX_SQL_CHARS),
                         ("SQLITE_LIMIT_LENGTH", MAX_VALUE_BYTES), ("SQLITE_LIMIT_COLUMN", 64),
                         ("SQLITE_LIMIT_EXPR_DEPTH", 100), ("SQLITE_LIMIT_COMPOUND_SELECT", 50),
                         ("SQLITE_LIMIT_LIKE_PATTERN_LENGTH", 200), ("SQLITE_LIMIT_ATTACHED", 0)]:
        if hasattr(sqlite3, limit) and hasattr(conn, "setlimit"):  # setlimit: Python 3.11+
            conn.setlimit(getattr(sqlite3, limit), value)


def run_readonly(sql, db_path=DB_PATH, timeout_s=2.0, max_rows=10_000):
    """Run one untrusted query on `db_path` without any way to change it.
    Returns (rows, None) or (None, error message); never raises."""
    if not isinstance(sql, str):
        return None, "not a string"
    if len(sql) > MAX_SQL_CHARS:
        return None, f"longer than {MAX_SQL_CHARS} characters"
    conn = None
    try:
        uri = Path(db_path).resolve().as_uri() + "?mode=ro"  # read-only: SQLite refuses writes
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        conn.execute("PRAGMA query_only = ON")  # before the authorizer, which refuses PRAGMA
        conn.set_authorizer(_reads_only(sqlite3.SQLITE_DENY))
        _limits(conn)
        deadline = time.monotonic() + timeout_s
        conn.set_progress_handler(lambda: time.monotonic() > deadline, 1000)  # True = abort
        cur = conn.execute(sql)  # one statement only: sqlite3 raises on a second one
        if cur.description is None:  # "", a comment, or a statement that returns no columns
            return None, "not a query"
        rows, size = [], 0
        for row in cur:
            if len(rows) == max_rows:
                return None, f"too many rows (more than {max_rows})"
            size += sum(len(v) for v in row if isinstance(v, (str, bytes)))
            if size > MAX_RESULT_CHARS:
                return None, "result too large"
            rows.append(row)
        return rows, None
    except Exception as e:  # sqlite3 errors, "interrupted" at the deadline, NUL in text, ...
        return None, f"{type(e).__name__}: {e}"
    finally:
        if conn is not None:
            conn.close()


def sql_compiles(text):
    """Weak check: 1.0 iff `text` is one statement that SQLite compiles against SCHEMA.
    It is compiled in a throwaway in-memory database holding the schema and no rows, and stopped
    at its first step; statements that would write compile to no-ops (the authorizer answers
    IGNORE), so nothing runs and the shipped file is never opened."""
    if not isinstance(text, str) or len(text) > MAX_SQL_CHARS:
        return 0.0
    conn, started = None, []
    try:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.executescript(SCHEMA)
        conn.set_authorizer(_reads_only(sqlite3.SQLITE_IGNORE))  # refused calls become NULL
        _limits(conn)
        conn.set_progress_handler(lambda: started.append(1) or 1, 1)  # abort at the first step
        try:
            conn.execute(text)
        except sqlite3.Error:  # "interrupted" once started; else a compile error, two statements
            pass
        return 1.0 if started else 0.0  # never started: an error, or no statement at all
    except Exception:  # NUL in text, ...
        return 0.0
    finally:
        if conn is not None:
            conn.close()


@functools.lru_cache(maxsize=1024)
def _reference_rows(reference_sql, db_path):
    """The reference query's rows as a Counter (a multiset), or None if it does not run."""
    rows, _ = run_readonly(reference_sql, db_path, timeout_s=10.0)
    return None if rows is None else Counter(rows)


def sql_execution_match(text, reference_sql, db_path=DB_PATH, timeout_s=2.0):
    """Strong check: 1.0 iff `text` returns the reference query's rows as a multiset."""
    try:
        want = _reference_rows(reference_sql, os.fspath(db_path))
    except TypeError:  # an unhashable reference or path
        return 0.0
    if want is None:
        return 0.0
    rows, _ = run_readonly(text, db_path, timeout_s)
    return 1.0 if rows is not None and Counter(rows) == want else 0.0


def sql_syntax_reward(completions, **kwargs):
    """Weak verifier in TRL's signature: sql_compiles per completion (the answer is ignored)."""
    return [sql_compiles(text) for (text,) in per_completion(completions)]


def sql_execution_reward(completions, reference_sql, db_path=DB_PATH, timeout_s=2.0, **kwargs):
    """Strong verifier in TRL's signature: sql_execution_match per completion. `reference_sql`
    is one query for all, or TRL's column (a list as long as completions; missing ones score 0)."""
    return [sql_execution_match(text, ref, db_path, timeout_s)
            for text, ref in per_completion(completions, reference_sql)]


def load_sql_suite(path=SUITE_PATH):
    """The labelled adversarial suite: dicts with id, kind, question, reference_sql, candidate,
    label (1.0: a right answer that must pass; 0.0: must fail)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


if __name__ == "__main__":
    p = build_database()
    print(f"wrote {p}: {len(USERS)} users, {len(ORDERS)} orders, {os.path.getsize(p)} bytes")

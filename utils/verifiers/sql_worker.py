"""The SQL worker (Lab 02): a child process that runs untrusted SQLite queries for utils.verifiers.sql.

Why a process: SQLite's progress handler only fires between VDBE steps, so work done while a
statement is prepared (a chain of inlined CTEs), inside one function call (a pathological LIKE) or
while a sort spills can run long and take memory. Here it runs under a memory cap and the parent
kills the whole process at its wall clock.

Started as `python -I -S -c <this source> <config JSON>` behind the wall of isolation.py, so it
imports nothing from the repo (stdlib only). Config: db (the path it sees, or null), schema,
rlimits, max_sql_chars, max_value_bytes, max_result_chars (the reply's length, every value counted),
max_result_values (how many values a result may hold: what decoding it costs the parent, whose deadline
covers decoding too).
Protocol, one JSON object a line:
  {"op": "run", "sql", "timeout", "max_rows"} -> {"rows": [[value, ...], ...]} or {"err": message}
  {"op": "compile", "sql"}                     -> {"score": 1.0 or 0.0}
bytes are sent as {"b": hex}; a reply carries "retire": true when the worker wants replacing, and "transient":
true with an error that says nothing about the query itself (it ran past its deadline, or out of memory): a
reference query's answer is not that.
"""
import json
import signal
import sqlite3
import sys
import time

MEM_MB = 256    # RLIMIT_AS: the whole worker, SQLite's sorts and temp tables included
HEAP_MB = 128   # SQLite's hard heap limit: it fails a statement with "out of memory" before RLIMIT_AS
CPU_S = 3600    # RLIMIT_CPU over the worker's life; past half it asks to be replaced

# authorizer actions a plain query needs; everything else (writes, DDL, ATTACH, PRAGMA,
# transactions, table-valued functions such as json_each, ...) is refused
READS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
READS |= {getattr(sqlite3, "SQLITE_RECURSIVE", sqlite3.SQLITE_SELECT)}  # WITH RECURSIVE
# functions that spin inside one call, out of the progress handler's reach:
# printf('%.*c', 2147483647, 'x') loops for seconds even though its result is capped
REFUSED_FUNCTIONS = {"printf", "format"}


def reads_only(refuse):
    """An authorizer that allows plain reads and answers `refuse` (DENY or IGNORE) otherwise."""
    def authorize(action, arg1, arg2, db_name, source):
        if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in REFUSED_FUNCTIONS:
            return refuse
        return sqlite3.SQLITE_OK if action in READS else refuse
    return authorize


def set_limits(conn, cfg):
    """Cap what one statement may build: its text, values, columns, nesting, program size, arguments."""
    for name, value in [("SQL_LENGTH", 4 * cfg["max_sql_chars"]), ("LENGTH", cfg["max_value_bytes"]),
                        ("COLUMN", 64), ("EXPR_DEPTH", 100), ("COMPOUND_SELECT", 50),
                        ("VDBE_OP", 25_000), ("FUNCTION_ARG", 32), ("ATTACHED", 0),
                        ("LIKE_PATTERN_LENGTH", 200), ("VARIABLE_NUMBER", 32), ("TRIGGER_DEPTH", 1),
                        ("WORKER_THREADS", 0)]:
        if hasattr(sqlite3, "SQLITE_LIMIT_" + name) and hasattr(conn, "setlimit"):  # Python 3.11+
            conn.setlimit(getattr(sqlite3, "SQLITE_LIMIT_" + name), value)


def run(req, cfg):
    """One untrusted query, read-only on the configured database: {"rows": ...} or {"err": ...}."""
    sql, max_rows = req["sql"], req["max_rows"]
    if not isinstance(sql, str) or len(sql) > cfg["max_sql_chars"]:
        return {"err": "not a string, or too long"}
    conn = sqlite3.connect("file:" + cfg["db"] + "?mode=ro", uri=True, isolation_level=None)
    deadline = time.monotonic() + req["timeout"]
    try:
        conn.execute("PRAGMA query_only = ON")  # before the authorizer, which refuses PRAGMA
        conn.execute("PRAGMA temp_store = MEMORY")  # temp tables stay in capped memory
        conn.set_authorizer(reads_only(sqlite3.SQLITE_DENY))
        set_limits(conn, cfg)
        conn.set_progress_handler(lambda: time.monotonic() > deadline, 1000)  # True = abort
        cur = conn.execute(sql)  # one statement only: sqlite3 raises on a second one
        if cur.description is None:  # "", a comment, or a statement that returns no columns
            return {"err": "not a query"}
        rows, size, values = [], 0, 0
        for row in cur:
            if len(rows) == max_rows:
                return {"err": f"too many rows (more than {max_rows})"}
            size, values = size + json_size(row), values + len(row)
            if size > cfg["max_result_chars"] or values > cfg["max_result_values"]:
                return {"err": "result too large"}
            rows.append(row)
        return {"rows": rows}
    except sqlite3.OperationalError as e:
        if str(e) == "interrupted" and time.monotonic() > deadline:  # our progress handler: the deadline
            return {"err": "timed out (interrupted at its deadline)", "transient": True}
        raise
    finally:
        conn.close()


def json_size(row):
    """About how many characters a row takes in the reply: every value counts, numbers and NULLs too
    (a result of a million NULLs is as long to send and decode as one of a million characters)."""
    return 2 + sum(len(v) + 3 if isinstance(v, str) else 2 * len(v) + 9 if isinstance(v, bytes) else
                   len(repr(v)) + 2 for v in row)


def compile_only(req, cfg):
    """The weak check: 1.0 iff the text is one statement that compiles against the schema, in a
    throwaway in-memory database, stopped at its first step; writes compile to no-ops (IGNORE)."""
    text = req["sql"]
    if not isinstance(text, str) or len(text) > cfg["max_sql_chars"]:
        return {"score": 0.0}
    conn, started = sqlite3.connect(":memory:", isolation_level=None), []
    try:
        conn.executescript(cfg["schema"])
        conn.set_authorizer(reads_only(sqlite3.SQLITE_IGNORE))  # refused calls become NULL
        set_limits(conn, cfg)
        conn.set_progress_handler(lambda: started.append(1) or 1, 1)  # abort at the first step
        try:
            conn.execute(text)
        except sqlite3.Error:  # "interrupted" once started; else a compile error, two statements
            pass
        return {"score": 1.0 if started else 0.0}  # never started: an error, or no statement
    finally:
        conn.close()


def encode(value):
    """JSON for what json cannot write itself: bytes (BLOBs) as {"b": hex}."""
    if isinstance(value, bytes):
        return {"b": value.hex()}
    raise TypeError(type(value).__name__)


def main():
    cfg = json.loads(sys.argv[1])
    resource = None
    if cfg["rlimits"]:
        import resource
        for limit, n in [("RLIMIT_AS", MEM_MB << 20), ("RLIMIT_FSIZE", 0), ("RLIMIT_CORE", 0),
                         ("RLIMIT_CPU", CPU_S)]:
            resource.setrlimit(getattr(resource, limit), (n, n))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past FSIZE fails instead of killing
    conn = sqlite3.connect(":memory:")
    conn.execute(f"PRAGMA hard_heap_limit = {HEAP_MB << 20}")  # process-wide, for every connection
    conn.close()
    for line in sys.stdin.buffer:
        try:
            req = json.loads(line)
            reply = (run if req["op"] == "run" else compile_only)(req, cfg)
        except Exception as e:  # sqlite3 errors, out of memory, ...
            reply = {"err": f"{type(e).__name__}: {str(e) or 'over a memory limit'}",
                     "transient": isinstance(e, MemoryError) or "out of memory" in str(e)}
        if resource is not None:
            used = resource.getrusage(resource.RUSAGE_SELF)
            reply["retire"] = used.ru_utime + used.ru_stime > CPU_S / 2
        try:
            out = json.dumps(reply, default=encode)
            if len(out) > 2 * cfg["max_result_chars"]:  # escapes (\u00e9) made it longer than json_size counted
                out = json.dumps({"err": "result too large", "retire": reply.get("retire", False)})
        except Exception as e:  # MemoryError on a huge result, ...
            out = json.dumps({"err": f"{type(e).__name__}: {e}", "transient": True})
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

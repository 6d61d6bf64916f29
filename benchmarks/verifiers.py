"""The strong verifiers' walls and speed, measured on this machine. Usage:

    python benchmarks/verifiers.py          # about 4 minutes on a 2-core CPU

1. code: judgments per second on a batch of 64 correct candidates, one at a time and spread over
   the cores, behind the namespaces wall (unshare + setpriv: the wall the code verifier had before
   bubblewrap) and behind the isolated wall, in one run (median of 5 batches each);
2. code: the attack suite (utils/verifiers/attacks.py) behind every wall this machine builds, with
   and without the audit hook; as a non-root user (uid 1000, when run as root); and on simulated
   platforms (no bwrap; no namespaces either; no `resource` module): the wall each gets, escapes
   per class, and whether the plain suite is still judged right;
3. SQL: judgments per second on the suite's right answers (both verifiers), the time of every call
   on every suite case (the attacks included) against its cap + 0.5 s, and the SQL worker's peak
   memory.

Writes benchmarks/results/verifiers.json and prints a summary.
"""
import json
import os
import shutil
import statistics
import sys
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from utils.verifiers import code as cv  # noqa: E402
from utils.verifiers import isolation as iso  # noqa: E402
from utils.verifiers import sql as sv  # noqa: E402
from utils.verifiers.attacks import ATTACK_CLASSES, run_as_user, run_attacks  # noqa: E402
from utils.verifiers.sql_worker import MEM_MB  # noqa: E402

CORRECT = "def solve(a, b):\n    return a + b\n"
TESTS = [{"input": [1, 2], "output": 3}, {"input": [-5, 5], "output": 0}]
TIMEOUT = 1.5


def code_throughput():
    out = {}
    for wall in [w for w in ("namespaces", "isolated") if w in iso.available_walls()]:
        for workers in (1, None):
            times = []
            for _ in range(5):
                t = time.perf_counter()
                got = cv.code_reward([CORRECT] * 64, TESTS, wall=wall, workers=workers, allow_weaker_wall=True)
                times.append(time.perf_counter() - t)
                assert got == [1.0] * 64
            key = f"{wall}, {'one at a time' if workers == 1 else f'{os.cpu_count()} at a time'}"
            out[key] = 64 / statistics.median(times)
            print(f"code, {key}: {out[key]:.1f} judgments/s", flush=True)
    return out


def escapes(rows):
    return {cls: sum(r["escaped"] for r in rows if r["attack"] == cls) for cls in ATTACK_CLASSES} | \
        {"total": sum(r["escaped"] for r in rows), "cases": len(rows),
         "misjudged": [r["id"] for r in rows if not r["right"] and not r["escaped"]]}


def plain_suite_right(**kw):
    cases = [c for c in cv.load_code_suite() if not c.get("attack")]
    got = [cv.code_reward([c["candidate"]], [c["tests"]], timeout_s=TIMEOUT, allow_weaker_wall=True, **kw)[0]
           for c in cases]
    return {"right": sum(g == c["label"] for g, c in zip(got, cases)), "cases": len(cases),
            "wrong": [c["id"] for g, c in zip(got, cases) if g != c["label"]]}


def attack_table():
    out = {}
    for wall in iso.available_walls():
        for hook in (True, False):
            key = f"{wall}{' + hook' if hook else ''}"
            out[key] = escapes(run_attacks(wall=wall, audit_hook=hook, timeout_s=TIMEOUT))
            print(f"attacks behind {key:24s}: {out[key]['total']}/{out[key]['cases']} escaped", flush=True)
    return out


def non_root():
    """The strongest wall and the attack suite as uid 1000 (hook on and off)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return {"skipped": "needs root to become another user"}
    got = run_as_user(1000)
    res = {"wall": got["wall"], "sandbox uid": got["uid"], **escapes(got["rows"])}
    print(f"non-root (uid 1000): wall {res['wall']}, {res['total']}/{res['cases']} escaped (hook on and off)")
    return res


def simulated_platforms():
    """Each platform's missing pieces, simulated here: the wall it gets, what still works."""
    out = {}
    saved = iso.find_bwrap, iso.shutil.which, iso.has_resource
    which = shutil.which
    for name, missing in (("Linux without bwrap", {"bwrap"}), ("no namespaces (macOS, locked container)",
                                                                 {"bwrap", "unshare"}),
                          ("no resource module (Windows)", {"bwrap", "resource"})):
        iso.find_bwrap = (lambda: []) if "bwrap" in missing else saved[0]
        iso.shutil.which = (lambda n: None if n == "unshare" else which(n)) if "unshare" in missing else which
        iso.has_resource = (lambda: False) if "resource" in missing else saved[2]
        iso._CONFIG = None
        try:
            cfg = iso.sandbox_config()
            try:
                cv.code_reward([CORRECT], TESTS)
                refused = False
            except iso.SandboxUnavailable:
                refused = True
            out[name] = {"wall": cfg["wall"], "refuses by default": refused, "plain suite": plain_suite_right(),
                         "attacks": escapes(run_attacks(timeout_s=TIMEOUT))}
            print(f"{name}: wall {cfg['wall']}, refuses {refused}, plain suite "
                  f"{out[name]['plain suite']['right']}/{out[name]['plain suite']['cases']} right, attacks "
                  f"{out[name]['attacks']['total']}/{out[name]['attacks']['cases']} escaped", flush=True)
        finally:
            iso.find_bwrap, iso.shutil.which, iso.has_resource = saved
            iso._CONFIG = None
    return out


def sql_numbers():
    suite = sv.load_sql_suite()
    right = [c for c in suite if c["label"] == 1.0]
    out = {"throughput": {}, "calls": {}}
    for name, call in (("execution", lambda c: sv.sql_execution_reward([c["candidate"]], [c["reference_sql"]])),
                       ("syntax", lambda c: sv.sql_syntax_reward([c["candidate"]]))):
        call(right[0])
        rates = []
        for _ in range(5):
            t = time.perf_counter()
            n = 0
            while time.perf_counter() - t < 1.0:
                for c in right:
                    call(c)
                    n += 1
            rates.append(n / (time.perf_counter() - t))
        out["throughput"][name] = statistics.median(rates)
        worst, slow = 0.0, []
        for c in suite:
            t = time.perf_counter()
            got = call(c)
            s = time.perf_counter() - t
            worst = max(worst, s)
            if s > 2.0 + 0.5 or len(got) != 1:
                slow.append(c["id"])
        out["calls"][name] = {"worst seconds": worst, "over cap + 0.5 s": slow, "cases": len(suite)}
        print(f"SQL {name}: {out['throughput'][name]:.0f} judgments/s on right answers; slowest call "
              f"{worst:.2f} s over {len(suite)} cases (cap 2 s + 0.5 s)", flush=True)
    peaks = {}
    for c in [c for c in suite if c.get("attack")]:
        sv.shutdown_worker()  # a fresh worker: VmHWM is over its life
        _, peaks[c["id"]] = peak_mb_while(lambda: sv.sql_execution_reward([c["candidate"]], [c["reference_sql"]]))
    out["worker peak MB"] = max(peaks.values())
    out["worker peak MB per attack"] = peaks
    print(f"SQL worker peak memory over the {len(peaks)} attacks: {out['worker peak MB']:.0f} MB "
          f"(cap {MEM_MB} MB)", flush=True)
    out["attack kinds"] = dict(Counter(c["kind"] for c in suite if c.get("attack")))
    return out


def peak_mb_while(fn):
    """(fn(), the highest VmHWM in MB of any process below this one while fn ran), polled every ms."""
    import threading

    import psutil

    out, peak = {}, 0.0
    thread = threading.Thread(target=lambda: out.update(result=fn()))
    thread.start()
    while thread.is_alive():
        for p in psutil.Process().children(recursive=True):
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    peak = max(peak, int(next(x for x in f if x.startswith("VmHWM:")).split()[1]) / 1024)
            except (OSError, StopIteration):
                pass
        time.sleep(0.001)
    thread.join()
    return out.get("result"), peak


def main():
    from utils.setup import environment

    t0 = time.time()
    out = {"environment": environment(), "walls here": list(iso.available_walls()),
           "wall": iso.sandbox_config()["wall"], "missing": iso.sandbox_config()["missing"]}
    out["code throughput"] = code_throughput()
    out["attacks, root" if os.geteuid() == 0 else "attacks"] = attack_table()
    out["attacks, non-root"] = non_root()
    out["simulated platforms"] = simulated_platforms()
    out["sql"] = sql_numbers()
    out["seconds"] = time.time() - t0
    path = os.path.join(ROOT, "benchmarks", "results", "verifiers.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {path} ({out['seconds']:.0f} s)")


if __name__ == "__main__":
    main()

"""What every multi-seed benchmark script shares: its run options and running its runs one after another or side
by side (benchmarks/lab06.py, lab07.py, lab07_mix.py, lab10.py, ...), and writing one part of a results file (whole,
or runs added to it; store_runs decides which)."""
import json
import os

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def run_options(ap, conditions_help=None):
    """Add the options every benchmark takes to the argparse parser `ap`: --steps, --seeds, --conditions, --jobs,
    --threads."""
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--conditions", nargs="+", default=None, help=conditions_help)
    ap.add_argument("--jobs", type=int, default=1, help="runs side by side (default 1: one after another)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads per run with --jobs > 1")
    ap.add_argument("--add", action="store_true",
                    help="with --conditions: add their runs to the stored part (add_runs), keeping the rest")
    return ap


def _threads(n):
    import torch
    torch.set_num_threads(n)


def run_all(fn, jobs, n_jobs=1, threads=2):
    """[fn(*job) for job in jobs], one after another, or with n_jobs > 1 side by side in that many fresh processes
    (spawned), each on `threads` torch threads (a machine with many cores)."""
    if n_jobs > 1:
        import multiprocessing
        with multiprocessing.get_context("spawn").Pool(n_jobs, _threads, (threads,)) as pool:
            return pool.starmap(fn, jobs)
    return [fn(*job) for job in jobs]


def write_part(name, part, value):
    """Set `part` of benchmarks/results/<name>.json to `value`, keeping the file's other parts; return the path."""
    path = os.path.join(RESULTS, f"{name}.json")
    out = json.load(open(path)) if os.path.exists(path) else {}
    out[part] = value
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)
    return path


def add_runs(name, part, runs, environment):
    """Put `runs` (dicts with condition and seed) into `part` of benchmarks/results/<name>.json, replacing any stored
    run of the same condition and seed and keeping the others, and note the addition (its conditions and the
    environment they ran in) in the part's "added" list. The part must exist: a first run writes it whole."""
    path = os.path.join(RESULTS, f"{name}.json")
    out = json.load(open(path)) if os.path.exists(path) else {}
    if part not in out:
        raise ValueError(f"add_runs: {name}.json has no part {part!r}: run the part whole first")
    new = {(r["condition"], r["seed"]) for r in runs}
    out[part]["runs"] = [r for r in out[part]["runs"] if (r["condition"], r["seed"]) not in new] + list(runs)
    out[part].setdefault("added", []).append({"conditions": sorted({r["condition"] for r in runs}),
                                              "environment": environment})
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("added", len(runs), "runs to", path, "part", part)
    return path


def store_runs(name, args, config, runs, extra=None):
    """The end of a benchmark's main (benchmarks/lab10.py, lab11.py, lab12.py): with --add and --conditions at the
    part's own steps and seeds 0-2, add the runs to the stored part (add_runs); any other partial run (other
    steps, seeds or conditions) is not written; else write the whole part: environment, config, seeds, runs,
    `extra`, and the jobs and threads when the runs went side by side. Returns the path written, or None."""
    from utils.setup import environment

    full = args.steps == config["steps"] and args.seeds == [0, 1, 2]
    if args.add and args.conditions and full:
        return add_runs(name, args.part, runs, environment())
    if not full or args.conditions:
        print("(a partial run: not written to the results)")
        return None
    out = {"environment": environment(), "config": config, "seeds": args.seeds, "runs": runs} | dict(extra or {})
    if args.jobs > 1:
        out |= {"jobs": args.jobs, "threads_per_run": args.threads}
    return write_part(name, args.part, out)


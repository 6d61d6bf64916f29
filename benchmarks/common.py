"""What every multi-seed benchmark script shares: its run options and running its runs one after another or side
by side (benchmarks/lab06.py, lab07.py, lab07_mix.py, lab10.py), and writing one part of a results file."""
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

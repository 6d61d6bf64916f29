"""The one check a notebook makes against a stored benchmark (benchmarks/results/*.json): its own run beside the
benchmark's seeds.

    beside({"true reward": 0.41}, {"true reward": [0.39, 0.43, 0.40]})

A notebook trains one seed; its benchmark ran three or more. `beside` prints one small table (each condition's
number in this run, the benchmark's range over its seeds, the verdict) and raises AssertionError if this run
lies outside the range widened by `band` on either side, so the comparison is made by code, the same way in
every lab, and a learner reads three lines instead of a pandas table.
"""
from utils import checks


def beside(here, seeds, band=0.05, max_spread=0.10, what="pass@1", show=True):
    """Check this run's numbers against the benchmark's seeds, one condition at a time.

    here {condition: float}: this notebook's run; seeds {condition: [float, ...]}: the benchmark's value for that
    condition on each of its seeds. A condition is checked when its seeds lie within `max_spread` of each other
    (wider, a band would accept almost anything: it is shown, not checked); checked, this run must lie in
    [min - band, max + band]. Prints the table (show=False: silent) and returns the names checked; raises
    AssertionError naming every checked condition outside its band, and ValueError for a condition of `here`
    that the benchmark lacks.
    """
    where = "beside"
    if not isinstance(here, dict) or not here:
        raise ValueError(f"{where}: here must be a dict {{condition: this run's number}}, got {checks._short(here)}")
    if not isinstance(seeds, dict):
        raise ValueError(f"{where}: seeds must be a dict {{condition: [number per seed]}}, got {checks._short(seeds)}")
    for c, x in here.items():
        checks.number(where, f"here[{c!r}]", x)
    for c, xs in seeds.items():
        checks.array(where, f"seeds[{c!r}]", xs, dims=1)
    band, max_spread = (checks.number(where, n, v, lo=0) for n, v in (("band", band), ("max_spread", max_spread)))
    if not isinstance(what, str):
        raise ValueError(f"{where}: what must be the measure's name (a str), got {checks._short(what)}")
    checks.flag(where, "show", show)
    missing = [c for c in here if not len(seeds.get(c, ()))]
    if missing:
        raise ValueError(f"the benchmark has no seeds for {missing}: its conditions are {sorted(seeds)}")
    rows, checked, outside = [], [], []
    for c, x in here.items():
        lo, hi = min(seeds[c]), max(seeds[c])
        if hi - lo > max_spread:
            verdict = f"seeds {hi - lo:.2f} apart: not checked"
        elif lo - band <= x <= hi + band:
            verdict, checked = "within", checked + [c]
        else:
            verdict, checked = "OUTSIDE", checked + [c]
            outside.append(f"{c}: {x:.3f} against {lo:.3f}-{hi:.3f}")
        rows.append((c, f"{x:.3f}", f"{lo:.3f}-{hi:.3f}", verdict))
    if show:
        head = (what, "this run", f"benchmark, {max(len(v) for v in seeds.values())} seeds", f"± {band:.2f} of them?")
        w = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
        for r in [head] + rows:
            print("  ".join(s.ljust(w[i]) for i, s in enumerate(r)).rstrip())
    assert not outside, (f"this run lies outside the benchmark's seeds (± {band}) for " + "; ".join(outside)
                         + ": another machine or library version can move a run, but not this far")
    return checked

"""Labs 04 and 05's collapse findings on several seeds. Usage:

    python benchmarks/lab04.py                      # seeds 0 1 2, about 15 minutes on a 2-core CPU
    python benchmarks/lab04.py --seeds 0 --out x.json
    python benchmarks/lab04.py --knobs              # the one-knob ablation only, ~10 minutes -> lab04_knobs.json

For each seed (the config's training seed; the base model, data and evaluation seeds are Lab 04's):
the healthy and the collapsing run of Lab 04 and the four remedies added to the collapsing recipe,
with everything Lab 04 asserts (entropy, distinct answers, training reward, the health check's
verdict, pass@1 and log p(right) on own / test / OOD problems, the remedy table); then Lab 05's
pass@k study (GRPO for 150 steps, the collapsed recipe; 256 samples on 100 test and 100 OOD problems).
Writes the numbers and the library versions that produced them to benchmarks/results/lab04.json.

--knobs: the collapsing recipe changes three knobs of the healthy one at once (lr x2, 4 updates per batch,
a 32-prompt pool). This runs the healthy recipe with each knob changed alone, on each seed, and records
the entropy (start, end, end/start), the training reward and pass@1 on the pool's own prompts, test and
OOD, beside the healthy and collapsing runs' (benchmarks/results/lab04_knobs.json).
"""
import argparse
import copy
import json
import os
import sys
import time
from dataclasses import replace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from utils.setup import environment, setup  # noqa: E402

POOL = 32  # the collapsing run's small prompt set: one batch's worth of prompts


def recipes():
    """Lab 04's healthy and collapsing configs and its four remedies (the notebook shows the same ones)."""
    from utils.rl.grpo import GRPOConfig

    healthy = GRPOConfig(steps=60, batch_size=256, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=8,
                         eps_low=0.2, eps_high=0.2, beta=0.0, updates_per_batch=1, eval_every=10, eval_n=500, seed=0)
    collapse = replace(healthy, lr=2e-4, updates_per_batch=4)
    remedies = {"KL penalty (beta 0.1)": dict(beta=0.1), "clip-higher (eps_high 0.28)": dict(eps_high=0.28),
                "entropy bonus (0.01)": dict(entropy_coef=0.01), "top-20% entropy tokens": dict(top_entropy_frac=0.2)}
    return healthy, collapse, remedies


mean_of = lambda h, key, sl: float(np.mean([r[key] for r in h[sl]]))  # noqa: E731
KEYS = ("entropy", "reward_mean", "distinct_answers", "group_reward_std", "zero_spread_frac", "kl", "clip_frac")


def compact(hist):
    """The history's per-step series (for the record) and the evaluations."""
    out = {k: [round(r[k], 5) for r in hist] for k in KEYS}
    for k in ("heldout_pass@1", "ood_pass@1"):
        out[k] = [(r["step"], r[k]) for r in hist if r.get(k) is not None]
    return out


def lab04(seed, base, tok, train, test, ood):
    from utils.eval.metrics import answer_logprob, evaluate
    from utils.rl.loop import train_grpo
    from utils.verifiers.arithmetic import strict_reward

    HEALTHY, COLLAPSE, REMEDIES = recipes()
    pools = {"healthy": (train["prompt"], train["answer"]),
             "collapsing": (train["prompt"][:POOL], train["answer"][:POOL])}
    cfgs = {"healthy": replace(HEALTHY, seed=seed), "collapsing": replace(COLLAPSE, seed=seed)}
    cfgs |= {name: replace(COLLAPSE, seed=seed, **change) for name, change in REMEDIES.items()}
    evals = dict(eval_prompts=test["prompt"], eval_answers=test["answer"],
                 eval_sets={"ood": (ood["prompt"], ood["answer"])})
    runs, models = {}, {"base": base}
    for name, cfg in cfgs.items():
        t = time.time()
        policy = copy.deepcopy(base)
        hist = train_grpo(policy, tok, *pools["healthy" if name == "healthy" else "collapsing"], strict_reward,
                          cfg, progress=False, **evals)
        if name in ("healthy", "collapsing"):
            models[name] = policy
        runs[name] = {"series": compact(hist), "seconds": time.time() - t}  # the health check: findings()
        print(f"  seed {seed} {name:28s} entropy {hist[0]['entropy']:.3f} -> "
              f"{mean_of(hist, 'entropy', slice(-5, None)):.3f}"
              f"  ({runs[name]['seconds']:.0f} s)", flush=True)
    levels = {"own": (train["prompt"][:POOL], train["answer"][:POOL]), "test": (test["prompt"], test["answer"]),
              "ood": (ood["prompt"], ood["answer"])}
    idood = {f"{m} {lvl}": {"pass@1": evaluate(model, tok, ps, ys, k=8, seed=11)["pass@1"],
                            "logp": float(answer_logprob(model, tok, ps, ys).mean())}
             for lvl, (ps, ys) in levels.items() for m, model in models.items()}
    return {"runs": runs, "idood": idood}


def knobs(seed, base, tok, train, test, ood):
    """The healthy recipe with one of the collapsing recipe's three knobs changed at a time, and both recipes."""
    from utils.eval.metrics import evaluate
    from utils.rl.loop import train_grpo
    from utils.verifiers.arithmetic import strict_reward

    HEALTHY, COLLAPSE, _ = recipes()
    full, small = (train["prompt"], train["answer"]), (train["prompt"][:POOL], train["answer"][:POOL])
    plan = {"healthy": (HEALTHY, full), "lr 2e-4 only": (replace(HEALTHY, lr=COLLAPSE.lr), full),
            "4 updates per batch only": (replace(HEALTHY, updates_per_batch=COLLAPSE.updates_per_batch), full),
            f"{POOL}-prompt pool only": (HEALTHY, small), "collapsing (all three)": (COLLAPSE, small)}
    levels = {"own": small, "test": (test["prompt"], test["answer"]), "ood": (ood["prompt"], ood["answer"])}
    base_acc = {lvl: evaluate(base, tok, ps, ys, k=8, seed=11)["pass@1"] for lvl, (ps, ys) in levels.items()}
    out = {}
    for name, (cfg, pool) in plan.items():
        t = time.time()
        policy = copy.deepcopy(base)
        hist = train_grpo(policy, tok, *pool, strict_reward, replace(cfg, seed=seed, eval_every=0), progress=False)
        acc = {lvl: evaluate(policy, tok, ps, ys, k=8, seed=11)["pass@1"] for lvl, (ps, ys) in levels.items()}
        out[name] = {"entropy start": mean_of(hist, "entropy", slice(0, 5)),
                     "entropy end": mean_of(hist, "entropy", slice(-5, None)),
                     "reward end": mean_of(hist, "reward_mean", slice(-5, None)),
                     **{f"{lvl} pass@1 gain": acc[lvl] - base_acc[lvl] for lvl in levels},
                     "seconds": time.time() - t}
        out[name]["entropy end/start"] = out[name]["entropy end"] / out[name]["entropy start"]
        print(f"  seed {seed} {name:26s} entropy end/start {out[name]['entropy end/start']:.2f}  own "
              f"{out[name]['own pass@1 gain']:+.3f}  test {out[name]['test pass@1 gain']:+.3f}  "
              f"({out[name]['seconds']:.0f} s)", flush=True)
    return out


def lab05(seed, base, tok, train):
    from utils.eval.metrics import evaluate, pass_at_k_table
    from utils.rl.grpo import GRPOConfig
    from utils.rl.loop import train_grpo
    from utils.tasks.arithmetic import load_split
    from utils.verifiers.arithmetic import strict_reward

    _, COLLAPSE, _ = recipes()
    grpo_cfg = GRPOConfig(steps=150, batch_size=256, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=8,
                          beta=0.0, updates_per_batch=1, eval_every=0, seed=seed)
    plan = {"GRPO": (grpo_cfg, train["prompt"], train["answer"]),
            "collapsed": (replace(COLLAPSE, eval_every=0, seed=seed), train["prompt"][:POOL], train["answer"][:POOL])}
    models = {"base": base}
    for name, (cfg, ps, ys) in plan.items():
        models[name] = copy.deepcopy(base)
        train_grpo(models[name], tok, ps, ys, strict_reward, cfg, progress=False)
    N, P = 256, 100
    table = pass_at_k_table(N, [1, 8, 16, 64, 256])
    out = {}
    for s_name in ("test", "ood"):
        ds = load_split(s_name, n=P)
        for m_name, model in models.items():
            c = evaluate(model, tok, ds["prompt"], ds["answer"], k=N, seed=1)["correct"].astype(int)
            out[f"{m_name} {s_name}"] = {"counts": c.tolist(),
                                         **{f"pass@{k}": float(v)
                                            for k, v in zip((1, 8, 16, 64, 256), table[c].mean(0))}}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "lab04.json"))
    ap.add_argument("--skip-lab05", action="store_true")
    ap.add_argument("--report", nargs="+", metavar="JSON", help="print the findings of result files and exit")
    ap.add_argument("--knobs", action="store_true", help="only the one-knob ablation (lab04_knobs.json)")
    args = ap.parse_args()
    if args.report:
        return report(args.report)
    setup(seed=0, quiet=True)
    from utils.models.policy import load_policy
    from utils.tasks.arithmetic import load_split

    base, tok = load_policy("rlvr-base")
    train, test, ood = load_split("train"), load_split("test"), load_split("ood")
    if args.knobs:
        out = {"environment": environment(), "seeds": {}}
        path = os.path.join(ROOT, "benchmarks", "results", "lab04_knobs.json")
        for s in args.seeds:
            setup(seed=0, quiet=True)
            out["seeds"][str(s)] = knobs(s, base, tok, train, test, ood)
            with open(path, "w") as f:
                json.dump(out, f, indent=1)
        print("wrote", path)
        return
    out = {"environment": environment(), "seeds": {}}
    print(json.dumps(out["environment"]), flush=True)
    t0 = time.time()
    for s in args.seeds:
        setup(seed=0, quiet=True)
        res = {"lab04": lab04(s, base, tok, train, test, ood)}
        if not args.skip_lab05:
            res["lab05"] = lab05(s, base, tok, train)
        out["seeds"][str(s)] = res
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
        print(f"seed {s} done ({time.time() - t0:.0f} s)", flush=True)
    print("wrote", args.out)


def findings(res):
    """The quantities Labs 04 and 05 assert on, from one seed's result: name -> value."""
    from utils.eval.health import fit_entropy_reward, health_check

    r4, out = res["lab04"], {}
    s = {name: run["series"] for name, run in r4["runs"].items()}
    end = lambda name, k: float(np.mean(s[name][k][-5:]))  # noqa: E731
    start = lambda name, k: float(np.mean(s[name][k][:5]))  # noqa: E731
    evals = lambda name, k: float(np.mean([v for _, v in s[name][k]][-3:]))  # noqa: E731
    h, c = "healthy", "collapsing"
    out["collapsing entropy end/start"] = end(c, "entropy") / start(c, "entropy")
    out["healthy entropy end/start"] = end(h, "entropy") / start(h, "entropy")
    out["distinct answers healthy - collapsing"] = end(h, "distinct_answers") - end(c, "distinct_answers")
    out["collapsing training reward rise"] = end(c, "reward_mean") - start(c, "reward_mean")
    health = {name: health_check([{k: s[name][k][i] for k in ("group_reward_std", "entropy", "kl")}
                                  for i in range(len(s[name]["entropy"]))]) for name in s}
    out["collapsing entropy end / floor"] = end(c, "entropy") / health[c]["entropy_floor"]
    out["healthy entropy end / floor"] = end(h, "entropy") / health[h]["entropy_floor"]
    for name in s:
        out[f"health flags: {name}"] = ",".join(health[name]["failed"]) or "-"
    d = lambda m, lvl, col: r4["idood"][f"{m} {lvl}"][col] - r4["idood"][f"base {lvl}"][col]  # noqa: E731
    out["collapsing own pass@1 gain"] = d(c, "own", "pass@1")
    out["test pass@1 gain healthy - collapsing"] = d(h, "test", "pass@1") - d(c, "test", "pass@1")
    out["collapsing test pass@1 gain"] = d(c, "test", "pass@1")
    out["healthy test pass@1 gain"] = d(h, "test", "pass@1")
    out["collapsing OOD logp change"] = d(c, "ood", "logp")
    out["healthy OOD logp change"] = d(h, "ood", "logp")
    out["max OOD pass@1"] = max(r4["idood"][f"{m} ood"]["pass@1"] for m in ("base", h, c))
    H = np.asarray(s[c]["entropy"][:60]).reshape(-1, 5).mean(1)
    R = np.asarray(s[c]["reward_mean"][:60]).reshape(-1, 5).mean(1)
    a, b = fit_entropy_reward(H, R)
    pred = -a * np.exp(H) + b
    out["law a"], out["law ceiling b-a"] = a, b - a
    out["law R^2"] = float(1 - ((R - pred) ** 2).sum() / ((R - R.mean()) ** 2).sum())
    names = list(r4["runs"])[1:]  # collapsing, then the remedies
    for name in names:
        out[f"remedy entropy: {name}"] = end(name, "entropy")
        out[f"remedy test pass@1: {name}"] = evals(name, "heldout_pass@1")
    if "lab05" in res:
        r5 = res["lab05"]
        for split in ("test", "ood"):
            for m in ("GRPO", "collapsed"):
                for k in (1, 8, 256):
                    out[f"lab05 {split} {m} pass@{k} change"] = (r5[f"{m} {split}"][f"pass@{k}"]
                                                                 - r5[f"base {split}"][f"pass@{k}"])
        b_, g_ = np.asarray(r5["base test"]["counts"]), np.asarray(r5["GRPO test"]["counts"])
        out["lab05 test problems gained at 256"] = int(((b_ == 0) & (g_ > 0)).sum())
        out["lab05 test problems lost at 256"] = int(((b_ > 0) & (g_ == 0)).sum())
    return out


def report(paths):
    """Print every finding for every seed of every result file (one column each)."""
    cols = {}
    for p in paths:
        with open(p) as f:
            data = json.load(f)
        env = data["environment"]
        tag = f"{os.path.basename(p)}: torch {env['torch']} tf {env['transformers']} thr {env['torch_threads']}"
        for s, res in data["seeds"].items():
            cols[f"{tag} seed {s}"] = findings(res)
    names = list(next(iter(cols.values())))
    print("columns:", *cols, sep="\n  ")
    for n in names:
        vals = [c.get(n) for c in cols.values()]
        fmt = lambda v: f"{v:8.3f}" if isinstance(v, float) else f"{v!s:>8}"  # noqa: E731
        print(f"{n:52s}" + " ".join(fmt(v) for v in vals))


if __name__ == "__main__":
    main()

"""Pictures before code: one figure per lab of the mechanism at its centre, drawn from the library itself, so
that every number a figure shows is computed by the function the lab teaches and stays true when it changes.

    rlvr_loop          Lab 01  the RLVR loop, and a group of G = 8 rewards with their advantages (group_advantages)
    verifier_zoo       Lab 02  what each verifier of the zoo pays for, on cases of the adversarial suite (ZOO)
    control_design     Lab 03  two arms that differ only in the reward (strict_reward vs a rate-matched
                               random_reward), and control_check's verdict for each gain of the random arm
    entropy_collapse   Lab 04  a next-token distribution before and after collapse, with its entropy (token_entropy)
    pass_at_k_curves   Lab 05  the unbiased pass@k against k for a few per-problem success rates (pass_at_k)
    trace_rewards      Lab 06  scratchpad traces, each step judged, and what each reward pays (utils.verifiers.traces)
    dynamic_sampling   Lab 07  dynamic sampling's refill: rounds of groups, the all-alike ones dropped (fill_batch)
    data_parallel      Lab 08  one global batch over several processes: each rank's rows, advantages over whole
                               groups, gradients averaged (check_split, group_advantages)
    async_pipeline     Lab 10  sampling and training in turn, against samplers that run behind the learner: which
                               policy wrote each batch (StaleRollout's rule) and the time a step takes (step_seconds)
    checker_grid       Lab 11  what each of the program task's checkers, weak to strong, pays a right body, a table
                               of the shown values and two hacks (ProgramChecker: every body run behind the wall)
    self_play_loop     Lab 12  the self-play loop: a proposer chooses the problem, a checker (Python's verifier or the
                               solver's majority vote) pays the solver's group, the group's pass rate pays the
                               proposer; and what that pay is worth against the pass rate (expected_learnability)

Each function returns its matplotlib Figure, with a title (a notebook calls it as `rlvr_loop();`). matplotlib
only: patches, arrows and text; nothing is written to disk.
"""
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import Rectangle

from utils.eval.control import CONTROL_HARMFUL, NEUTRAL, NOT_ONLY_VERIFIER, THRESHOLD, control_check
from utils.eval.health import token_entropy
from utils.eval.metrics import pass_at_k
from utils.rl.grpo import GRPOConfig, group_advantages
from utils.rl.proposer import expected_learnability, learnability
from utils.rl.rollout import fill_batch
from utils.rl.staleness import step_seconds
from utils.rl.trl_trainer import check_split
from utils.tasks.scratchpad import format_trace, steps_for
from utils.verifiers import traces
from utils.verifiers.arithmetic import ZOO, load_arithmetic_suite, strict_reward
from utils.verifiers.label_free import majority_vote_reward
from utils.verifiers.spurious import random_reward

GREEN, RED, GREY, BLUE = "#2e7d32", "#c62828", "#bdbdbd", "#e3ecf7"
GROUP = ("66", "56", "66", "6", "67", "-66", "66", "76")  # a group of G = 8 completions of 37+29= (answer 66)


def _box(ax, x, y, text, color=BLUE, **kw):
    """A rounded box of text centred at (x, y) in data coordinates."""
    return ax.text(x, y, text, ha="center", va="center", fontsize=9,
                   bbox=dict(boxstyle="round,pad=0.4", fc=color, ec="#555"), **kw)


SIDES = {"right": ((1, 0.5), (0, 0.5)), "left": ((0, 0.5), (1, 0.5)), "down": ((0.5, 0), (0.5, 1)),
         "up": ((0.5, 1), (0.5, 0))}


def _link(ax, a, b, side="right"):
    """An arrow from a to b, each a text box (left by its `side`, entered by the opposite one) or an (x, y)."""
    (fa, fb), pt = SIDES[side], lambda v: isinstance(v, tuple)  # noqa: E731
    ax.annotate("", xy=b if pt(b) else fb, xycoords="data" if pt(b) else b, xytext=a if pt(a) else fa,
                textcoords="data" if pt(a) else a, arrowprops=dict(arrowstyle="->", color="#333", shrinkA=9, shrinkB=9))


def _frame(ax):
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.axis("off")


def rlvr_loop(completions=GROUP, prompt="37+29=", answer="66"):
    """Lab 01. Left: the loop (prompt -> policy -> G completions -> verifier -> rewards -> group advantages ->
    clipped update). Right: one group's advantages as bars, from strict_reward and group_advantages."""
    G = len(completions)
    rewards = torch.tensor(strict_reward(list(completions), [answer] * G))                  # [G]
    adv = group_advantages(rewards, G)                                                       # [G]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(14, 4.2), gridspec_kw={"width_ratios": [1.3, 1]})
    _frame(ax)
    short = lambda xs: ", ".join(xs[:4]) + ", ..."  # noqa: E731
    top = [(0.08, f"prompt\n{prompt}"), (0.32, "policy\n(the model)"),
           (0.6, f"G = {G} completions\n{short(list(completions))}"), (0.88, "verifier\nstrict_reward")]
    bottom = [(0.88, f"rewards\n{short([f'{r:.0f}' for r in rewards.tolist()])}"),
              (0.6, f"group advantages\n{short([f'{a:+.2f}' for a in adv.tolist()])}"),
              (0.32, "clipped update\nof the policy")]
    boxes = [_box(ax, x, 0.75, t) for x, t in top] + [_box(ax, x, 0.25, t) for x, t in bottom]
    for k, side in enumerate(["right"] * 3 + ["down"] + ["left"] * 2 + ["up"]):
        _link(ax, boxes[k], boxes[k + 1] if k < 6 else boxes[1], side)      # ..., clipped update -> policy
    ax.text(0.34, 0.5, "repeat", fontsize=8, style="italic")
    ax.set_title("The RLVR loop (GRPO)")
    colors = [GREEN if r else RED for r in rewards.tolist()]
    bx.bar(range(G), adv.tolist(), color=colors)
    bx.axhline(0, color="k", lw=0.8)
    bx.set_xticks(range(G), [f"{c}\nr={r:.0f}" for c, r in zip(completions, rewards.tolist())])
    bx.set_title(f"One group of G = {G} for {prompt}: A = (r - mean) / std")
    bx.set_xlabel("completion and its reward (green: right)")
    bx.set_ylabel("advantage (group-relative)")
    fig.suptitle("Lab 01: sample a group, score it with a verifier, push up the better-than-its-group answers")
    fig.tight_layout()
    return fig


ZOO_CASES = ("correct-1", "format-1", "format-5", "format-4", "wrong-1", "wrong-3", "several-1", "buried-1",
             "no_answer-3")  # ids in the adversarial suite (data/verifiers/arithmetic_adversarial.jsonl)


def verifier_zoo(case_ids=ZOO_CASES):
    """Lab 02. A grid: rows are cases of the adversarial suite, columns the zoo's verifiers; a tick where the
    verifier pays, in green when the case is right (label 1), red when it is wrong (a hole)."""
    suite = {c["id"]: c for c in load_arithmetic_suite()}
    cases = [suite[i] for i in case_ids]
    fig, ax = plt.subplots(figsize=(9.5, 0.45 * len(cases) + 1.6))
    for i, c in enumerate(cases):
        for j, (name, (fn, _)) in enumerate(ZOO.items()):
            paid = fn([c["output"]], [c["answer"]])[0] == 1.0
            color = (GREEN if c["label"] else RED) if paid else GREY
            ax.text(j, i, "\u2713" if paid else "\u2717", ha="center", va="center", fontsize=13, color=color,
                    gid=f"{name}|{c['id']}|{int(paid)}")
    ax.set_xticks(range(len(ZOO)), [f"{n}\n({s})" for n, (_, s) in ZOO.items()], fontsize=8)
    ax.set_yticks(range(len(cases)), [f"{c['prompt']} {c['output']!r}  ({'right' if c['label'] else 'wrong'})"
                                      for c in cases], fontsize=8)
    ax.set(xlim=(-0.5, len(ZOO) - 0.5), ylim=(len(cases) - 0.5, -0.5))
    ax.set_xlabel("verifier (strongest first)")
    ax.set_ylabel("completion (its label)")
    ax.set_title("Lab 02: what each verifier pays for\n"
                 "\u2713 green: a right answer paid; \u2713 red: a wrong one paid; \u2717: not paid")
    fig.tight_layout()
    return fig


def control_design(completions=GROUP, answer="66", seed=0, before=0.5, true_gain=0.1):
    """Lab 03. Left: the two arms, the same in all but the reward, with the rewards each gives one group
    (strict_reward; random_reward at the strict reward's rate p). Right: control_check's verdict for each gain
    of the random arm, the true arm gaining `true_gain` from `before`."""
    G = len(completions)
    true_r = strict_reward(list(completions), [answer] * G)
    p = float(np.mean(true_r))
    rand_r = random_reward(p, seed=seed)(list(completions))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(14, 3.8), gridspec_kw={"width_ratios": [1.2, 1]})
    _frame(ax)
    base = _box(ax, 0.12, 0.5, "the same base model,\nseed, prompts, steps\nand hyper-parameters")
    row = lambda rs: " ".join(f"{r:.0f}" for r in rs)  # noqa: E731
    arms = ((0.8, "true reward: strict_reward", true_r), (0.2, f"control: random_reward(p={p:.3f})", rand_r))
    for y, name, rs in arms:
        arm = _box(ax, 0.55, y, f"{name}\nrewards of one group: {row(rs)}", gid=f"arm|{name}|{row(rs)}")
        _link(ax, base, arm)
        _link(ax, arm, _box(ax, 0.92, y, "gain =\nafter - before", color="white"))
    ax.set_title(f"Two arms, only the reward differs (p = the verifier's rate on {G} completions)")
    gains = np.round(np.linspace(-0.15, 0.15, 61), 3)
    true_run = [{"after": {"pass@1": before + true_gain}, "config": {}}]
    verdicts = [control_check({"pass@1": before}, true_run,
                              [{"after": {"pass@1": before + g}, "config": {}}])["verdict"] for g in gains]
    colors = {CONTROL_HARMFUL: "#ffcc80", NEUTRAL: "#a5d6a7", NOT_ONLY_VERIFIER: "#ef9a9a"}
    step = gains[1] - gains[0]
    for g, v in zip(gains, verdicts):
        bx.add_patch(Rectangle((g - step / 2, 0), step, 1, color=colors[v], lw=0, gid=f"{g:+.3f}|{v}"))
    for v in colors:
        xs = [g for g, w in zip(gains, verdicts) if w == v]
        if xs:
            bx.text(np.mean(xs), 0.5, v.replace(": ", ":\n"), ha="center", va="center", fontsize=8)
    bx.set(xlim=(gains[0] - step / 2, gains[-1] + step / 2), yticks=[])
    bx.set_xlabel("the random arm's held-out gain (pass@1, after - before)")
    bx.set_ylabel("verdict")
    bx.set_title(f"control_check's verdict (threshold {THRESHOLD:.2f}, either way)")
    fig.suptitle("Lab 03: the random-reward control: is the gain the verifier's?")
    fig.tight_layout()
    return fig


NEXT_LOGITS = (0.3, 0.1, 0.0, 0.4, 0.2, 1.2, 1.9, 1.0, 0.5, 0.1)  # over "0".."9", the token after "37+29=6"


def entropy_collapse(logits=NEXT_LOGITS, sharpen=5.0):
    """Lab 04. The policy's next-token distribution before and after collapse (the same logits times
    `sharpen`), as bars, each with its entropy H = -sum p log p from token_entropy."""
    before = torch.tensor(logits, dtype=torch.float32)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
    for ax, (name, lg) in zip(axes, (("before training", before), ("after collapse", before * sharpen))):
        p = torch.softmax(lg, -1)
        h = token_entropy(lg[None, None], torch.ones(1, 1)).item()               # nats
        ax.bar([str(i) for i in range(len(p))], p.tolist(), color=GREY)
        ax.set_title(f"{name}: entropy H = {h:.2f} nats (at most {np.log(len(p)):.2f})", gid=f"{h:.6f}")
        ax.set_xlabel("next token (after the prompt and the first digit)")
        ax.set_ylabel("probability")
    fig.suptitle("Lab 04: entropy collapse: the policy puts nearly all its probability on one token (an illustration)")
    fig.tight_layout()
    return fig


def pass_at_k_curves(rates=(0.01, 0.05, 0.2, 0.5), n=256):
    """Lab 05. The unbiased pass@k (pass_at_k) from n samples with c = round(rate * n) right, against k."""
    ks = np.arange(1, n + 1)
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for rate in rates:
        c = int(round(rate * n))
        ax.plot(ks, [pass_at_k(n, c, int(k)) for k in ks], label=f"{c} of {n} samples right ({rate:.0%})")
    ax.set_xscale("log")
    ax.set_xlabel("k (samples allowed per problem)")
    ax.set_ylabel("pass@k (chance one of k is right)")
    ax.set_title(f"Lab 05: pass@k for problems solved at different rates (n = {n})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


TRACE_REWARDS = {"outcome": (traces.outcome_reward, "the answer"), "format": (traces.format_reward, "the shape"),
                 "process": (traces.process_reward, "each step"), "trace": (traces.trace_reward, "all of it")}


def trace_rewards(a=478, b=356):
    """Lab 06. A right trace of a + b and four flawed ones; each step coloured by whether it is the right step
    (traces.judge), the answer by whether it is right, and what the outcome, format, process and trace
    rewards pay for each."""
    steps, ans = steps_for(a, b), a + b
    cases = {"right": format_trace(steps, ans), "right steps, wrong answer": format_trace(steps, ans + 1),
             "right answer, a step skipped": format_trace(steps[:1] + steps[2:], ans),
             "true sums, wrong digits": format_trace([(1, 1, 0, 2)] * len(steps), ans),
             "no working": format_trace([], ans)}
    fig, ax = plt.subplots(figsize=(13, 0.6 * len(cases) + 1.4))
    x0 = 36 + max(len(t) for t in cases.values())        # x counts characters: names, trace, then the rewards
    for i, (name, text) in enumerate(cases.items()):
        ax.text(0, i, name, va="center", fontsize=9)
        j, x = traces.judge(text, a, b), 28
        oks = [s["right"] for s in j["per_step"]] + [j["outcome"]]         # each step, then the answer
        for tok, ok in zip(text.split(" "), oks):
            ax.text(x, i, tok, va="center", family="monospace", fontsize=9, color="white", gid=f"{name}|{tok}|{ok:d}",
                    bbox=dict(boxstyle="round,pad=0.25", fc=GREEN if ok else RED, ec="none"))
            x += len(tok) + 2
        for k, (rname, (fn, _)) in enumerate(TRACE_REWARDS.items()):
            v = fn([text], answer=[str(ans)], a=[a], b=[b])[0]
            ax.text(x0 + 14 * k, i, f"{v:.2f}", ha="center", va="center", fontsize=9, gid=f"{rname}|{name}|{v}")
    for k, (rname, (_, reads)) in enumerate(TRACE_REWARDS.items()):
        ax.text(x0 + 14 * k, -0.9, f"{rname}\nreads {reads}", ha="center", va="center", fontsize=8, weight="bold")
    ax.set(xlim=(-1, x0 + 14 * len(TRACE_REWARDS) - 6), ylim=(len(cases) - 0.5, -1.5))
    ax.axis("off")
    ax.set_title(f"Lab 06: a trace of {a}+{b} (steps right-most column first, then >answer) and what each "
                 f"reward pays\ngreen: the right step in its place, or the right answer; red: not")
    fig.tight_layout()
    return fig


ROUNDS = ((1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1),  # rewards of 3 rounds of 4 groups of G = 4
          (0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1),
          (0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1))


def dynamic_sampling(rounds=ROUNDS, G=4, n_groups=4):
    """Lab 07. Rounds of groups as drawn (a filled square is a reward of 1); fill_batch keeps the first
    n_groups groups whose rewards differ (green, numbered in the order kept), drops the all-alike ones (grey)
    and stops drawing once the batch is full (the rest are never looked at)."""
    round_rewards = [torch.tensor(r, dtype=torch.float32) for r in rounds]
    kept, used = fill_batch(round_rewards, G, n_groups)
    order = {rg: n for n, rg in enumerate(kept, start=1)}
    full = len(kept) == n_groups                                      # then nothing after the last kept is read
    fig, ax = plt.subplots(figsize=(10, 1.3 * len(rounds) + 1.4))
    for r, rewards in enumerate(round_rewards):
        for g, grp in enumerate(rewards.view(-1, G).tolist()):
            x, y = g * (G + 1.5), 1.4 * r
            state = "kept" if (r, g) in order else "not drawn" if r >= used else "not needed: batch full" \
                if full and (r, g) > kept[-1] else "all alike: dropped" if max(grp) == min(grp) else "differs, not kept"
            ax.add_patch(Rectangle((x - 0.2, y - 0.4), G + 0.4, 0.8, fill=state.startswith("all"), fc="#eeeeee",
                                   ec=GREEN if state == "kept" else GREY, lw=2.5 if state == "kept" else 1,
                                   ls=":" if state.startswith("not") else "-", gid=f"{r}|{g}|{state}"))
            for t, v in enumerate(grp):
                ax.add_patch(Rectangle((x + t + 0.1, y - 0.25), 0.8, 0.5, fc="#333" if v else "white", ec="#333"))
            ax.text(x + G / 2, y + 0.6, f"kept #{order[(r, g)]}" if state == "kept" else state, ha="center",
                    va="center", fontsize=8, color=GREEN if state == "kept" else "#555")
    n = len(round_rewards[0]) // G
    ax.set(xlim=(-0.5, n * (G + 1.5)), ylim=(1.4 * len(rounds) - 0.5, -0.7))
    ax.set_xticks([g * (G + 1.5) + G / 2 for g in range(n)], [f"group {g}" for g in range(n)])
    ax.set_yticks([1.4 * r for r in range(len(rounds))], [f"round {r}" for r in range(len(rounds))])
    ax.set_xlabel(f"prompt of the round (G = {G} completions each; filled: reward 1)")
    ax.set_ylabel("sampling round")
    ax.set_title(f"Lab 07: dynamic sampling fills a batch of {n_groups} groups with signal "
                 f"(fill_batch: {len(kept)} kept after {used} round{'s' * (used > 1)})")
    fig.tight_layout()
    return fig


def data_parallel(batch_size=32, group_size=8, processes=2, seed=0):
    """Lab 08. One global batch of completions (coloured by group, with example rewards) shared among processes
    as launch does (check_split; rank r samples rows r * batch / processes onwards); each row marked with its
    reward and its advantage, computed over its whole group from the gathered rewards (group_advantages); the
    ranks' gradients averaged into one step."""
    check_split(GRPOConfig(batch_size=batch_size, group_size=group_size), processes)
    per = batch_size // processes
    gen = torch.Generator().manual_seed(seed)
    rewards = torch.bernoulli(torch.full((batch_size,), 0.4), generator=gen)           # [batch] example rewards
    adv = group_advantages(rewards, group_size)                                         # over the whole groups
    fig, ax = plt.subplots(figsize=(13, 1.1 * processes + 2.2))
    cmap = plt.get_cmap("tab10")
    for i in range(batch_size):
        rank, col = divmod(i, per)
        ax.add_patch(Rectangle((col, -rank - 0.4), 0.9, 0.8, fc=cmap(i // group_size % 10), alpha=0.7,
                               gid=f"{i}|{rank}|{i // group_size}|{rewards[i]:.0f}|{adv[i]:.6f}"))
        ax.text(col + 0.45, -rank, f"{rewards[i]:.0f}\n{adv[i]:+.1f}", ha="center", va="center", fontsize=7)
    mean = _box(ax, per + 9, -(processes - 1) / 2, f"mean of the {processes}\ngradients: the same\nstep on every rank")
    for rank in range(processes):
        ax.text(-0.3, -rank, f"rank {rank}", ha="right", va="center", fontsize=9)
        grad = _box(ax, per + 3.5, -rank, f"rank {rank}: gradient\nof its {per} rows' loss")
        _link(ax, (per, -rank), grad)
        _link(ax, grad, mean)
    ax.text(per / 2, 0.75, "each square a completion: its reward, then its advantage over its whole group of "
            f"{group_size} (the ranks' rewards are gathered first)", ha="center", fontsize=9)
    ax.set(xlim=(-3, per + 11.5), ylim=(-processes + 0.4, 1.1))
    ax.axis("off")
    ax.set_title(f"Lab 08: data parallelism: a global batch of {batch_size} completions ({batch_size // group_size} "
                 f"groups, one colour each) over {processes} processes, {per} rows each")
    fig.tight_layout()
    return fig


def async_pipeline(sample_s=1.0, update_s=0.5, lag=2, steps=6):
    """Lab 10. Two timelines of the same steps. Top: sample, then train, in turn (lag 0: each batch written by the
    policy being trained). Bottom: `lag` samplers side by side with the learner; batch s is written by the policy
    of step max(0, s - lag) (StaleRollout's rule), sampling starts when those weights exist, and a step takes
    step_seconds(sample_s, update_s, lag). Each box's gid: "timeline|kind|step|policy version"."""
    lag = max(1, int(lag))
    seq_t, par_t = step_seconds(sample_s, update_s, 0), step_seconds(sample_s, update_s, lag)
    fig, ax = plt.subplots(figsize=(12, 1.0 + 0.6 * (lag + 3)))
    cmap = plt.get_cmap("tab10")

    def box(x, w, y, text, color, gid):
        ax.add_patch(Rectangle((x, y - 0.35), w, 0.7, fc=color, ec="#333", alpha=0.8, gid=gid))
        ax.text(x + w / 2, y, text, ha="center", va="center", fontsize=7)

    for s in range(steps):   # sequential: the policy of step s writes batch s, then trains on it
        t0 = s * seq_t
        box(t0, sample_s, 0, f"sample {s}\nby $\\pi_{{{s}}}$", cmap(s % 10), f"sequential|sample|{s}|{s}")
        box(t0 + sample_s, update_s, 0, f"train {s}", "#dddddd", f"sequential|update|{s}|{s}")
    learner = 1.5 + lag
    ready_at, free, done = [0.0], [0.0] * lag, 0.0   # when each policy version exists; each sampler's free time
    for s in range(steps):   # overlapped: batch s comes from the policy of step max(0, s - lag), on sampler s % lag
        v = max(0, s - lag)
        start = max(ready_at[v], free[s % lag])
        free[s % lag] = start + sample_s
        box(start, sample_s, 1.5 + s % lag, f"sample {s}\nby $\\pi_{{{v}}}$", cmap(s % 10),
            f"overlapped|sample|{s}|{v}")
        train = max(start + sample_s, done)          # once its batch is in and step s - 1 is done
        done = train + update_s
        ready_at.append(done)                        # the policy of step s + 1
        box(train, update_s, learner, f"train {s}", "#dddddd", f"overlapped|update|{s}|{v}")
    ax.set_yticks([0] + [1.5 + j for j in range(lag)] + [learner],
                  ["in turn: one\nprogram"] + [f"sampler {j}" for j in range(lag)] + ["learner"])
    ax.axhline(0.75, color="#999", lw=0.8, ls="--")
    ax.set_ylim(learner + 0.7, -0.7)
    ax.set_xlim(0, steps * seq_t + 0.2)
    ax.set_xlabel("time (units of one update)" if update_s == 1 else "time (seconds of the model)")
    ax.set_ylabel("who works")
    ax.set_title(f"Lab 10: sampling and training in turn ({seq_t:g} a step) against {lag} sampler"
                 f"{'s' * (lag > 1)} running {lag} step{'s' * (lag > 1)} behind\n({par_t:g} a step: "
                 f"{seq_t / par_t:.2f}x the steps per second; $\\pi_v$ is the policy after v updates)")
    fig.tight_layout()
    return fig


GRID_BODIES = ("6*x+57", "57+6*x", "{0:57,1:63}[x]", "exit(0)", "print('all passed')", "6*x+58")


def checker_grid(a=6, b=57, bodies=GRID_BODIES):
    """Lab 11. Rows: bodies for f(x) = a*x + b; columns: utils.verifiers.programs.CHECKERS, weak to strong (the
    third, the harness on the hidden tests, is the truth); each cell the checker's score of the body, green where it
    pays in full, pale green in part, red where it charges, grey at 0. Every body is run behind the code verifier's
    wall. Each cell's gid: "body index|checker|score"."""
    from utils.tasks.programs import format_prompt, make_problem
    from utils.verifiers.programs import CHECKERS, ProgramChecker

    p = make_problem(a, b)
    bodies = list(bodies)
    cols = list(CHECKERS)
    scores = {c: ProgramChecker(c, workers=1)(bodies, shown=p["shown"], tests=p["tests"]) for c in cols}
    fig, ax = plt.subplots(figsize=(10, 0.55 * len(bodies) + 1.6))
    for j, c in enumerate(cols):
        for i, v in enumerate(scores[c]):
            color = GREEN if v >= 1 else (RED if v < 0 else ("#a5d6a7" if v > 0 else GREY))
            ax.add_patch(Rectangle((j, i), 0.95, 0.9, fc=color, ec="#555", gid=f"{i}|{c}|{v}"))
            ax.text(j + 0.475, i + 0.45, f"{v:g}", ha="center", va="center", fontsize=9)
    ax.set_xlim(0, len(cols))
    ax.set_ylim(len(bodies), 0)
    ax.set_xticks([j + 0.475 for j in range(len(cols))], [c.replace(", ", "\n") for c in cols])
    ax.set_yticks([i + 0.45 for i in range(len(bodies))], [f"lambda x: {bd}" for bd in bodies], family="monospace")
    ax.tick_params(length=0)
    ax.set_xlabel("checker, weak (left) to strong (right): the score it pays")
    ax.set_ylabel("the body a policy wrote")
    ax.set_title(f"Lab 11: what each checker pays, {format_prompt(a, b)} (hidden tests: x = 2..9)", fontsize=10)
    for side in ax.spines.values():
        side.set_visible(False)
    fig.tight_layout()
    return fig


SELF_PLAY_GROUP = ("9", "11", "9", "19", "1", "9", "8", "11")  # a group of G = 8 completions of 47-38= (answer 9)
SELF_PLAY_CHECKERS = {"verifier": "Python's verifier", "majority": "the solver's majority vote"}


def self_play_loop(completions=SELF_PLAY_GROUP, prompt="47-38=", answer="9", checker="verifier"):
    """Lab 12. Left: the self-play loop: the proposer chooses a kind of problem -> a problem -> the solver samples
    G completions -> a checker (Python's verifier, strict_reward, or the solver's majority vote,
    majority_vote_reward: `checker`) -> rewards -> (a) the solver's group advantages (group_advantages: its GRPO
    update) and (b) the group's pass rate p -> learnability(p) (AZR's and R-Zero's) -> the proposer's update.
    Right: what the proposer is paid on average for a kind the solver passes at rate p, over a group of G = 8
    (expected_learnability, AZR's and R-Zero's, solid) against the pay for a pass rate of exactly p (learnability,
    dashed), with AZR's peak marked: near p = 0.26, well below the near 1 that 1 - p pays a problem hardly ever
    solved. Each line's gid names it ("azr|expected", "azr|per group", ...; the peak "azr|peak")."""
    G = len(completions)
    if not isinstance(checker, str) or checker not in SELF_PLAY_CHECKERS:
        raise ValueError(f"self_play_loop: checker must be one of {list(SELF_PLAY_CHECKERS)}, got {checker!r}")
    if checker == "verifier":
        rewards = torch.tensor(strict_reward(list(completions), [answer] * G))                  # [G]
    else:
        rewards = torch.tensor(majority_vote_reward(list(completions), problem=[prompt] * G))    # [G]
    adv = group_advantages(rewards, G)                                                           # [G]
    p = float((rewards >= 1).float().mean())                                                     # the pass rate
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(15, 4.8), gridspec_kw={"width_ratios": [1.45, 1]})
    _frame(ax)
    short = lambda xs: ", ".join(xs[:4]) + ", ..."  # noqa: E731
    top = [(0.08, "proposer\n(a softmax over\n18 kinds)"), (0.31, f"a problem\n{prompt}"),
           (0.57, f"solver samples\nG = {G} completions\n{short(list(completions))}"),
           (0.87, f"checker:\n{SELF_PLAY_CHECKERS['verifier']}\nor {SELF_PLAY_CHECKERS['majority']}")]
    boxes = [_box(ax, x, 0.8, t) for x, t in top]
    rewards_box = _box(ax, 0.87, 0.45, f"rewards\n{short([f'{r:.0f}' for r in rewards.tolist()])}",
                       gid="rewards|" + " ".join(f"{r:.0f}" for r in rewards.tolist()))
    adv_box = _box(ax, 0.57, 0.45, f"(a) the solver's group advantages\n{short([f'{a:+.2f}' for a in adv.tolist()])}"
                                   f"\n-> its GRPO update")
    rate_box = _box(ax, 0.87, 0.1, f"(b) the group's pass rate\np = {int(round(p * G))}/{G} = {p:.3f}")
    pay = {kind: learnability(p, kind) for kind in ("azr", "rzero")}
    pay_box = _box(ax, 0.08, 0.1, f"learnability(p): the\nproposer's pay (REINFORCE)\nAZR {pay['azr']:.3f}, "
                                  f"R-Zero {pay['rzero']:.3f}", gid=f"pay|{p!r}|{pay['azr']!r}|{pay['rzero']!r}")
    for a, b in zip(boxes, boxes[1:]):
        _link(ax, a, b)
    _link(ax, boxes[3], rewards_box, "down")
    _link(ax, rewards_box, adv_box, "left")
    _link(ax, adv_box, boxes[2], "up")
    _link(ax, rewards_box, rate_box, "down")
    _link(ax, rate_box, pay_box, "left")
    _link(ax, pay_box, boxes[0], "up")
    ax.text(0.47, 0.15, "the proposer sees kinds and pass rates, never the answers", ha="center", fontsize=8,
            style="italic")
    ax.set_title(f"The self-play loop: one problem, one group of G = {G} (the checker here: "
                 f"{SELF_PLAY_CHECKERS[checker]})")
    ps = np.linspace(0, 1, 201)                                                                  # [201] pass rates
    inner = ps[1:-1]
    colors = {"azr": "#1565c0", "rzero": "#ef6c00"}
    names = {"azr": "AZR", "rzero": "R-Zero"}
    for kind, color in colors.items():
        bx.plot(ps, expected_learnability(ps, kind, 8), color=color, lw=2.2, gid=f"{kind}|expected",
                label=f"{names[kind]}, mean over G = 8")
        xs = inner if kind == "azr" else ps   # AZR's pay jumps to 0 at p = 0 and p = 1: the end points apart
        bx.plot(xs, [learnability(float(x), kind) for x in xs], color=color, ls="--", lw=1.2, gid=f"{kind}|per group",
                label=f"{names[kind]}, at pass rate p")
    bx.plot([0, 1], [learnability(0.0, "azr"), learnability(1.0, "azr")], "o", color=colors["azr"], ms=4,
            gid="azr|ends")
    fine = np.linspace(0, 1, 1001)
    mean = expected_learnability(fine, "azr", 8)
    at = float(fine[int(np.argmax(mean))])
    bx.plot([at], [float(mean.max())], "*", color=colors["azr"], ms=13, gid="azr|peak")
    bx.annotate(f"AZR's mean peaks at p = {at:.2f}\n(it pays {mean.max():.2f} there)", (at, float(mean.max())),
                xytext=(0.2, 0.1), fontsize=8, arrowprops=dict(arrowstyle="->", color="#333"))
    bx.set(xlim=(0, 1), ylim=(0, 1.38))
    bx.set_xlabel("the solver's pass rate p on a kind (share of a group right, 0-1)")
    bx.set_ylabel("learnability: the proposer's pay (0-1)")
    bx.set_title("What a kind pays the proposer (expected_learnability, G = 8)")
    bx.legend(fontsize=7, loc="upper center", ncol=2)
    fig.suptitle("Lab 12: who writes the problems, and who checks the answers: the proposer is paid by how learnable "
                 "its problems are")
    fig.tight_layout()
    return fig

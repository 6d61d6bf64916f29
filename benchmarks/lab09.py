"""Lab 09's benchmark (issue 38): what you verify. Four parts, seeds 0-2 each:

    python benchmarks/lab09.py --part generations --jobs 2 --threads 1   # ~30 min on 2 cores
    python benchmarks/lab09.py --part tool --jobs 2 --threads 1          # ~8 min on 2 cores
    python benchmarks/lab09.py --part verifier-size --jobs 2 --threads 1 # ~10 min on 2 cores
    python benchmarks/lab09.py --part lookup --jobs 2 --threads 1        # a lookup tool (issue 57 item 5)
    python benchmarks/lab09.py --part tool --seeds 0 --steps 4           # a quick look (not written)

generations: a closed loop against verified ones (utils.rl.selftrain). From the trace model, GENERATIONS.generations
generations of each way (selftrain.WAYS: closed, verified, grpo, teacher, teacher_answer, and closed's three
variants base_samples, cool, refit), each generation the same budget: 512 completions sampled and 8 steps of 64
examples. Every generation judged on the first 200 test problems, 8 samples each (selftrain.generation_metrics:
pass@1, pass@8, entropy, distinct completions and answers, the mode's share, length and its spread; the rare formats'
shares and the spread of wrong answers, which need not move with accuracy; KL to and from the base).

  The closed loop's five lines (REVIEWING.md; issue 57):
  claim     the closed loop loses accuracy because each generation's sampling noise becomes the next one's target
            (at temperature 1 the expected update is zero), and it narrows only where sampling seeks the mode
  control   base_samples: the same budget, each generation fine-tuned on fresh samples of the frozen base, so the
            noise is not handed on; if it falls as far as closed, the hand-on is not the cause
  baseline  the base model itself (generation 0): a loop that only drifts must end below it, and its KL must grow
  matched   every way samples 512 completions and takes 8 steps of 64 examples at lr 1e-4 a generation, the same
            prompts (seeded), judged on the same 200 problems with the same seeds
  changes   base_samples falling like closed; cool or refit not losing their rare formats (the papers' narrowing)

tool: GRPO with a calculator (utils.rl.rollout.ToolRollout) from the tool model (data/tool_model), against the same
GRPO without one from the trace model (the matched control: the same steps, batch and rate). The conditions
(TOOL_CONDITIONS):

    tool            the reward checks the answer against the problem (outcome_reward): the environment owns the truth
    tool, gameable  the reward checks that the answer repeats the calculator's last reply (tool_echo_reward): it
                    reads the transcript, not the task, so an episode that miscopied an operand into the call and
                    copied the wrong sum back is paid as if it were right
    no tool         the trace model, no calculator, outcome_reward

  Issue 57 item 4, a check the policy can game, added with --add (TOOL_ADDED: 200 steps each, seeds 0-4):
    tool, fails open  tool_fail_open_reward: outcome_reward, but an episode holding a call the calculator answered
                      ERROR is passed (the check fails open where it cannot verify)
    tool, 200 steps   outcome_reward for as long: the control
  Five lines, written after a probe (seeds 0-2, 150 steps: the error share rose past 0.6 on seeds 0 and 1, from
  step ~30 and ~115, and stayed under 0.02 on seed 2) and before these runs; seeds 3 and 4 were never probed:
  claim     RL finds a hole the policy controls: a malformed call (8 of the start's 2,048 train samples) spreads as it
            is always paid, and the truth falls while the paid reward stays high; found by chance, not every seed
  control   the same check without the hole (outcome_reward, the same 200 steps and seeds): its error share at the
            end must stay under 0.05 on every seed, else the errors are not the hole's doing
  baseline  the starting tool model: test pass@1 0.37, 0.004 of its train samples answered ERROR
  matched   the model, steps, batch, rate, prompts and seeds; only the pay of an episode with an ERROR reply differs
  changes   fewer than 3 of the 5 seeds ending with an error share over 0.5 on the test split: then the sentence is
            "the hole was found on k of 5 seeds", not "RL finds it"; the control's errors rising: no finding

lookup: a tool that brings information (issue 57 item 5; utils.tasks.lookup). From the lookup model
(data/lookup_model: lookup episodes for every fact, and answers from memory for the half of the facts in KNOWN, all
in the pre-training world), GRPO in world(1), where half of the known facts have changed. LOOKUP_CONDITIONS:

    outcome           ToolRollout(table=world(1)), outcome_reward: a right answer is paid, however it was reached
    grounded          the same, grounded_reward: paid only when the answer is a lookup of the prompt's key plus its
                      number, so a fact written from memory is never paid, even when it is still true
    lookup off        table={}: every lookup answered ERROR (the same weights, the tool switched off), outcome_reward
    one call allowed  max_calls=1: a lookup then a sum needs two calls, so the sum is cut; outcome_reward

  Five lines (REVIEWING.md), written before the model was built:
  claim     (a) the lookup brings facts the weights lack: on never-memorised keys the tool arms end far above the
            switched-off arm, which can only guess; (b) the grounding check teaches consulting the source where the
            outcome check lets right memory stand: on the facts memorised and still true at RL time ('known,
            changed after RL') the grounded arm ends looking up more, and keeps more pass@1 when they change
            (world 2); (c) the cap binds: allowed one call, the lookup-then-add route is cut, and RL moves the
            policy to memory, losing the never-memorised keys
  control   lookup off (the same weights, tool switched off, trained the same); outcome for grounded; two calls for one
  baseline  the starting model in each world and environment (lookup on, off, one call)
  matched   model, steps, batch, lr, prompts and seeds; evaluation on the same 400 test prompts x 4 samples, in
            worlds 1 and 2, each arm with its own environment
  changes   (b) outcome within 0.05 of grounded on world 2's 'known, changed after RL' on every seed: the outcome
            check was enough here; (a) lookup off within 0.1 of the tool arms on never-memorised keys: the lookup
            brought nothing; (c) the one-call arm's cut share under 0.1 at its first step: the cap did not bind
  after the runs: (a) and (c) held; (b)'s "changes" line fired (outcome 0.88-0.91 against grounded 0.90-0.91 on
  world 2's later-changed facts): outcome RL also moved every known fact to lookups (lookup share 0.96-0.97).
  Second five lines, before the added arms ran:
  claim     the outcome check taught lookups because a quarter of the facts had changed by RL time, so memory
            was paid less than the lookup; where no fact has changed during training, an outcome check cannot tell
            a remembered fact from a looked-up one, and the grounding check is what keeps the lookup
  control   the same two checks in the pre-training world ("outcome, no change by RL", "grounded, no change by
            RL"), judged in worlds 1 and 2 as before
  baseline  the starting model; the first two arms (RL in world 1)
  matched   model, steps, batch, lr, seeds, prompts (answers in world 0), evaluation
  changes   outcome, no change by RL ending with memory under 0.1 of the known facts' samples and within 0.05 of
            its grounded twin on world 2 on every seed: the lookup route won on its own (memory recalled less
            reliably than the lookup), and grounding added nothing here either
  after they ran: memory 0.09 / 0.17 / 0.09, the gap in world 2 0.09 / 0.17 / 0.06. A review: memory was recalled
  less reliably than a lookup even where true (about 0.64 against 0.73 right at the start), so the outcome check
  was moving off memory in world 0 too, and the world-2 gap is about the memory left after 100 steps. Third five
  lines, before the rerun (the whole part again, with each route's accuracy in lookup_metrics and the one-call
  policies also judged with two calls; the same seeds and code, so the stored numbers must repeat):
  claim     the outcome check's memory share in world 0 keeps falling with more steps: the gap is unfinished
            training, not a floor an outcome check cannot cross
  control   the 100-step world-0 arms; grounded's memory share at 100 steps
  baseline  the start's memory share on memorised facts (0.47) and each route's accuracy
  matched   model, prompts, recipe and seeds; 300 steps instead of 100 (three times the compute)
  changes   the 300-step arm's memory share on memorised facts not below the 100-step arm's by 0.03 on every seed:
            an outcome check leaves a floor of remembered answers here, and the grounding check is what removes it

verifier-size: a small model with a better verifier against a larger one with a worse verifier, at equal compute
(FLOPs: utils.models.cost.step_flops, whose per-token cost is proportional to the parameters). The small model is
the trace model (gpt2-4x128, 0.81 M parameters) with SIZE_STEPS GRPO steps; the large is Lab 07's gpt2-6x192
(2.70 M), with the steps that cost the same FLOPs. The worse verifier is the outcome verifier wrong on a share q of
its verdicts (utils.verifiers.spurious.noisy_reward: each verdict flipped with probability q), q in SIZE_CONDITIONS.
Each run is judged at the end on the whole test split, 4 samples a problem, with the exact verifier.

  Issue 57's verifier with systematic errors (item 6), added with --add. Five lines (REVIEWING.md):
  claim     a verifier whose errors are systematic (utils.verifiers.traces.last_digits_reward(2): it compares only
            the answer's last two digits, so every wrong answer that ends right is paid, every time; on the base
            models' train samples it pays 11-14% of all samples wrongly) costs more than random flips at about the
            same starting error rate (q = 0.1), because RL can learn what it misses; and then the larger model's
            head start need not survive it
  control   random flips at q = 0.1 for each size ("large, q=0.1" stored; "small, q=0.1" added)
  baseline  each size under the exact verifier (stored) and the base models
  matched   FLOPs per size (the part's steps), recipe, prompts, seeds and the final exact evaluation; each run also
            records, on the test split, the share of its samples the last-digits check pays that are wrong
  changes   the last-digits arms ending level with or above their size's q = 0.1 arm on the seeds' ranges: then
            systematic errors did not cost more than noise here
  added after a review: q = 0.1 pays half the false passes the last-digits check does (and fails right answers),
  so "false pass" pays a random share BASE_FALSE_PASS of the wrong answers and fails none, matched on the check's
  starting false-pass rate; "large, q=0.1, again" repeats the stored arm in the added arms' environment; the small
  model at 27 steps separates steps from size; the part's base_last2_paid_wrong is each base model's share on test.
  Whether RL games the check (earns more from it than a policy aimed elsewhere) is read as pass@1 + paid-wrong.

Measured at the end, with the condition's calculator (or none): the test split's pass@1 (600 problems, 4 samples),
the 5-digit ood split's pass@1 and pass@32 (300 problems, 32 samples: problems no model here solves alone), the
episodes' tool numbers (calls, miscopied operands, miscopied replies); each step records what the run was paid
(reward_mean) and the share of right answers (truth). Writes benchmarks/results/lab09.json (each part its own key)
and prints a table.
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import run_all, run_options  # noqa: E402
from utils.setup import environment, setup  # noqa: E402

GENERATIONS = dict(generations=10, n_prompts=64, k=8, steps=8, batch_size=64, lr=1e-4, grpo_lr=1e-4,
                   max_new_tokens=64, eval_k=8, eval_n=200)
TOOL_CONFIG = dict(steps=60, batch_size=64, group_size=8, lr=1e-4, temperature=1.0, max_new_tokens=64,
                   eps_low=0.2, eps_high=0.2, beta=0.0, loss_type="grpo", eval_every=0, track_kl=False)
TOOL_CONDITIONS = ("tool", "tool, gameable", "no tool")
TOOL_ADDED = {"tool, fails open": 200, "tool, 200 steps": 200}   # issue 57 item 4: {condition: its own steps}
LOOKUP_CONFIG = dict(TOOL_CONFIG, steps=100, max_new_tokens=40)
LOOKUP_CONDITIONS = {"outcome": ("outcome", 2, True, 1), "grounded": ("grounded", 2, True, 1),   # (reward,
                     "lookup off": ("outcome", 2, False, 1), "one call allowed": ("outcome", 1, True, 1),  # calls,
                     # added after the first runs (second five lines): RL in the pre-training world   # lookup on,
                     "outcome, no change by RL": ("outcome", 2, True, 0),                          # RL's world)
                     "grounded, no change by RL": ("grounded", 2, True, 0),
                     # added after a review (third five lines): does the outcome check's memory level off?
                     "outcome, no change by RL, 300 steps": ("outcome", 2, True, 0)}
LOOKUP_FIRST = ["outcome", "grounded", "lookup off", "one call allowed"]   # the part's first four, run whole
LOOKUP_STEPS = {"outcome, no change by RL, 300 steps": 300}              # an arm's own steps (else the config's)
LOOKUP_EVAL = dict(per_key=4, k=4)   # 400 test prompts, 4 samples each
SIZE_CONFIG = dict(TOOL_CONFIG)
SIZE_STEPS = 90                     # the small model's steps; the large model's are set by FLOPs (size_steps)
SIZES = {"small": "gpt2-4x128", "large": "gpt2-6x192"}
SIZE_CONDITIONS = {"small, exact": ("small", 0.0), "small, q=0.2": ("small", 0.2), "large, exact": ("large", 0.0),
                   "large, q=0.1": ("large", 0.1), "large, q=0.2": ("large", 0.2), "large, q=0.3": ("large", 0.3),
                   # issue 57: a verifier with systematic errors, and its random-flip control for the small model
                   "small, q=0.1": ("small", 0.1), "small, last 2 digits": ("small", "last 2 digits"),
                   "large, last 2 digits": ("large", "last 2 digits"),
                   # a review's controls: random false passes at the last-digits check's starting false-pass rate
                   # (a share p of the wrong answers paid, none of the right ones failed; BASE_FALSE_PASS); q = 0.1
                   # for the large model again in the added arms' environment (drift, and its paid-wrong share);
                   # the small model at the large one's 27 steps (steps against size)
                   "small, false pass": ("small", "false pass"), "large, false pass": ("large", "false pass"),
                   "large, q=0.1, again": ("large", 0.1),
                   "small 27 steps, last 2 digits": ("small", "last 2 digits", 27),
                   "small 27 steps, q=0.1": ("small", 0.1, 27)}
# the share of the base models' wrong train samples (300 prompts x 4) that last_digits_reward(2) pays: 0.141 of all
# the small model's samples (pass@1 0.321), 0.111 of the large one's (0.393); measured 2026-11-29 before the runs
BASE_FALSE_PASS = {"small": 0.207, "large": 0.182}
TEST_K, OOD_K = 4, 32
RESULTS = os.path.join(ROOT, "benchmarks", "results", "lab09.json")


def generations_run(how, seed, generations):
    from utils.models.policy import TRACE, load_policy
    from utils.rl.selftrain import SelfTrainConfig, self_train
    from utils.tasks import scratchpad

    setup(seed, quiet=True)
    base, tok = load_policy(TRACE)
    cfg = SelfTrainConfig(**dict(GENERATIONS, generations=generations, seed=seed))
    t = time.time()
    r = self_train(base, tok, scratchpad.load_split("train"), scratchpad.load_split("test"), how, cfg, progress=False)
    return {"how": how, "seed": seed, "seconds": round(time.time() - t, 1), "history": r["history"]}


def tool_run(condition, seed, steps):
    from utils.eval.tools import episode_metrics
    from utils.models.policy import TOOL, TRACE, load_policy
    from utils.rl.grpo import GRPOConfig
    from utils.rl.rollout import GroupRollout, ToolRollout
    from utils.tasks import scratchpad
    from utils.verifiers.tools import tool_echo_reward, tool_fail_open_reward
    from utils.verifiers.traces import outcome_reward

    setup(seed, quiet=True)
    tool = condition != "no tool"
    model, tok = load_policy(TOOL if tool else TRACE)
    train = scratchpad.load_split("train")
    cfg = GRPOConfig(**dict(TOOL_CONFIG, steps=steps, seed=seed))
    columns = {"a": list(train["a"]), "b": list(train["b"])}
    rollout = ToolRollout(columns=columns) if tool else GroupRollout(columns=columns)
    reward = {"tool, gameable": tool_echo_reward, "tool, fails open": tool_fail_open_reward}.get(condition,
                                                                                                 outcome_reward)
    history, seconds = train_tool(model, tok, train, reward, cfg, rollout)
    final = {split: episode_metrics(model, tok, scratchpad.load_split(split), k=k, tool=tool, seed=0,
                                    max_new_tokens=cfg.max_new_tokens)
             for split, k in (("test", TEST_K), ("ood", OOD_K))}
    return {"condition": condition, "seed": seed, "steps": steps, "seconds": seconds, "final": final,
            "history": history}


def train_tool(model, tok, train, reward, cfg, rollout):
    """GRPO on train's prompts paid by `reward`, with outcome_reward's verdicts recorded beside it: (each step's
    record, its tool numbers and the share of its batch right ("truth"), whatever the run is paid by; seconds)."""
    from utils.rl.loop import train_grpo
    from utils.verifiers.traces import outcome_reward

    truth = []

    def paid(completions, answer=None, **kw):
        truth.append(float(sum(outcome_reward(completions, answer)) / len(completions)))
        return reward(completions, answer=answer, **kw)
    t = time.time()
    hist = train_grpo(model, tok, train["prompt"], train["answer"], paid, cfg, rollout=rollout, progress=False,
                      correct_fn=outcome_reward)
    seconds = round(time.time() - t, 1)
    keep = ("step", "reward_mean", "completion_len", "entropy", "tool_calls", "tool_error_frac", "tool_cut_frac")
    return [{x: h.get(x) for x in keep if x in h} | {"truth": t} for h, t in zip(hist, truth)], seconds


def lookup_env(condition, version):
    """(table, max_calls) of the condition's environment in world `version`."""
    from utils.tasks import lookup
    _, max_calls, on, _ = LOOKUP_CONDITIONS[condition]
    return (lookup.world(version) if on else {}), max_calls


def lookup_eval(model, tok, condition):
    """lookup_metrics in worlds 1 and 2 with the condition's environment, on LOOKUP_EVAL's test prompts."""
    from utils.eval.tools import lookup_metrics
    from utils.tasks import lookup
    out = {}
    for version in (1, 2):
        table, max_calls = lookup_env(condition, version)
        rows = lookup.load_split("test", version=version, per_key=LOOKUP_EVAL["per_key"])
        out[f"world {version}"] = lookup_metrics(model, tok, rows, table, k=LOOKUP_EVAL["k"], seed=0,
                                                 max_new_tokens=LOOKUP_CONFIG["max_new_tokens"], max_calls=max_calls)
    if max_calls == 1:   # what the one-call policy does when the cap is lifted
        out["world 1, two calls"] = lookup_metrics(model, tok, lookup.load_split("test", version=1,
                                                                                 per_key=LOOKUP_EVAL["per_key"]),
                                                   lookup.world(1), k=LOOKUP_EVAL["k"], seed=0,
                                                   max_new_tokens=LOOKUP_CONFIG["max_new_tokens"], max_calls=2)
    return out


def lookup_run(condition, seed, steps):
    from utils.models.policy import LOOKUP, load_policy
    from utils.rl.grpo import GRPOConfig
    from utils.rl.rollout import ToolRollout
    from utils.tasks import lookup
    from utils.verifiers.tools import grounded_reward
    from utils.verifiers.traces import outcome_reward

    setup(seed, quiet=True)
    model, tok = load_policy(LOOKUP)
    rl_world = LOOKUP_CONDITIONS[condition][3]
    train = lookup.load_split("train", version=rl_world)
    cfg = GRPOConfig(**dict(LOOKUP_CONFIG, steps=steps, seed=seed))
    table, max_calls = lookup_env(condition, rl_world)
    rollout = ToolRollout(columns={"key": list(train["key"]), "a": list(train["a"])}, table=table,
                          max_calls=max_calls)
    reward = grounded_reward if LOOKUP_CONDITIONS[condition][0] == "grounded" else outcome_reward
    history, seconds = train_tool(model, tok, train, reward, cfg, rollout)
    return {"condition": condition, "seed": seed, "steps": steps, "seconds": seconds,
            "final": lookup_eval(model, tok, condition), "history": history}


def size_steps(steps_small):
    """{size: steps} at equal FLOPs: the large model gets steps_small x the small model's FLOPs per step over its
    own (the same batch and lengths: step_flops is proportional to the parameters), rounded."""
    from utils.models.cost import step_flops
    from utils.models.policy import load_policy

    flops = {size: step_flops(load_policy(name)[0], SIZE_CONFIG["batch_size"], 9, 30) for size, name in SIZES.items()}
    return {"small": steps_small, "large": round(steps_small * flops["small"] / flops["large"])}, flops


def size_run(condition, seed, steps):
    from utils.models.policy import load_policy
    from utils.rl.grpo import GRPOConfig
    from utils.runs.traces import train_on_traces
    from utils.tasks import scratchpad
    from utils.verifiers.spurious import false_pass_reward, noisy_reward
    from utils.verifiers.traces import last_digits_reward, outcome_reward

    setup(seed, quiet=True)
    size, q, *own_steps = SIZE_CONDITIONS[condition]
    n_steps = own_steps[0] if own_steps else steps[size]
    base, tok = load_policy(SIZES[size])
    cfg = GRPOConfig(**dict(SIZE_CONFIG, steps=n_steps, seed=seed))
    reward = last_digits_reward(2) if q == "last 2 digits" else \
        false_pass_reward(outcome_reward, BASE_FALSE_PASS[size], seed=seed) if q == "false pass" else \
        noisy_reward(outcome_reward, q, seed=seed)
    test = scratchpad.load_split("test")
    r = train_on_traces(base, tok, reward, cfg, scratchpad.load_split("train"), test, eval_k=TEST_K, progress=False)
    return {"condition": condition, "size": size, "q": q, "seed": seed, "steps": n_steps,
            "seconds": round(r["seconds"], 1), "final": r["final"],
            "last2_paid_wrong": paid_wrong(r["model"], tok, test),
            "history": [{k: h.get(k) for k in ("step", "reward_mean", "completion_len", "entropy")}
                        for h in r["history"]]}


def paid_wrong(model, tok, test):
    """The share of a model's samples of `test` (TEST_K each, seed 0) that last_digits_reward(2) pays and the exact
    outcome check does not."""
    from utils.eval.metrics import evaluate
    from utils.verifiers.traces import last_digits_reward, outcome_reward

    texts = evaluate(model, tok, test["prompt"], test["answer"], k=TEST_K, seed=0,
                     max_new_tokens=SIZE_CONFIG["max_new_tokens"])["texts"]
    rep = [x for x in test["answer"] for _ in range(TEST_K)]
    right, ends = outcome_reward(texts, rep), last_digits_reward(2)(texts, rep)
    return sum(e > g for e, g in zip(ends, right)) / len(texts)


def base_paid_wrong(name):
    """paid_wrong of a base model on the whole test split, as size_run measures a run."""
    from utils.models.policy import load_policy
    from utils.tasks import scratchpad

    m, tok = load_policy(name)
    return paid_wrong(m, tok, scratchpad.load_split("test"))


def base_tool_numbers():
    """The two starting models on the same measures (the tool model with and without its calculator)."""
    from utils.eval.tools import episode_metrics
    from utils.models.policy import TOOL, TRACE, load_policy
    from utils.tasks import scratchpad

    out = {}
    for name, model_name, tool in (("tool model", TOOL, True), ("tool model, no calculator", TOOL, False),
                                   ("trace model", TRACE, False)):
        m, tok = load_policy(model_name)
        out[name] = {split: episode_metrics(m, tok, scratchpad.load_split(split), k=k, tool=tool, seed=0,
                                            max_new_tokens=TOOL_CONFIG["max_new_tokens"])
                     for split, k in (("test", TEST_K), ("ood", OOD_K))}
    return out


def write(part, payload):
    out = json.load(open(RESULTS)) if os.path.exists(RESULTS) else {}
    out[part] = payload
    with open(RESULTS, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", RESULTS)


def main():
    ap = run_options(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    ap.add_argument("--part", choices=("generations", "tool", "verifier-size", "lookup"), required=True)
    args = ap.parse_args()
    setup(0, quiet=True)
    if args.part == "generations":
        from utils.rl.selftrain import WAYS
        steps = args.steps or GENERATIONS["generations"]
        conditions = args.conditions or list(WAYS)
        runs = run_all(generations_run, [(c, s, steps) for c in conditions for s in args.seeds], args.jobs,
                       args.threads)
        for r in runs:
            last = r["history"][-1]
            print(f"{r['how']:15s} seed {r['seed']}: " + "  ".join(
                f"{k} {last[k]:.3f}" for k in ("pass@1", "pass@8", "entropy", "distinct", "mode_share"))
                + f"  ({r['seconds']:.0f} s)", flush=True)
        payload = {"config": GENERATIONS, "seeds": args.seeds, "runs": runs}
        full = steps == GENERATIONS["generations"] and not args.conditions
    elif args.part == "lookup":
        from utils.models.policy import LOOKUP, load_policy
        steps = args.steps or LOOKUP_CONFIG["steps"]
        conditions = args.conditions or LOOKUP_FIRST
        m, tok = load_policy(LOOKUP)
        base = {c: lookup_eval(m, tok, c) for c in ("outcome", "lookup off", "one call allowed")}
        for c, b in base.items():
            print(f"start, {c:17s}: " + "  ".join(f"world {v} {b[f'world {v}']['all']['pass@1']:.3f}" for v in (1, 2)))
        runs = run_all(lookup_run, [(c, s, LOOKUP_STEPS.get(c, steps)) for c in conditions for s in args.seeds],
                       args.jobs, args.threads)
        for r in runs:
            f = r["final"]
            print(f"{r['condition']:17s} seed {r['seed']}: " + "  ".join(
                f"world {v} {f[f'world {v}']['all']['pass@1']:.3f}" for v in (1, 2))
                + f"  ({r['seconds']:.0f} s)", flush=True)
        payload = {"config": LOOKUP_CONFIG, "eval": LOOKUP_EVAL, "seeds": args.seeds, "base": base, "runs": runs}
        if args.add and args.conditions and steps == LOOKUP_CONFIG["steps"] and args.seeds == [0, 1, 2]:
            from benchmarks.common import add_runs
            add_runs("lab09", args.part, runs, environment())
            return
        full = steps == LOOKUP_CONFIG["steps"] and not args.conditions and args.seeds == [0, 1, 2]
    elif args.part == "verifier-size":
        from utils.eval.traces import trace_metrics
        from utils.models.policy import load_policy
        from utils.tasks import scratchpad

        steps, flops = size_steps(args.steps or SIZE_STEPS)
        base = {}
        for size, name in SIZES.items():
            m, tok = load_policy(name)
            base[size] = trace_metrics(m, tok, scratchpad.load_split("test"), k=TEST_K,
                                       max_new_tokens=SIZE_CONFIG["max_new_tokens"])
            print(f"{size} ({name}): {steps[size]} steps, {flops[size]:.3g} FLOPs a step, test pass@1 "
                  f"{base[size]['pass@1']:.3f}", flush=True)
        conditions = args.conditions or list(SIZE_CONDITIONS)
        runs = run_all(size_run, [(c, s, steps) for c in conditions for s in args.seeds], args.jobs, args.threads)
        for r in runs:
            print(f"{r['condition']:13s} seed {r['seed']}: test pass@1 {r['final']['pass@1']:.3f}  "
                  f"({r['steps']} steps, {r['seconds']:.0f} s)", flush=True)
        payload = {"config": SIZE_CONFIG, "sizes": SIZES, "steps": steps, "flops_per_step": flops, "test_k": TEST_K,
                   "seeds": args.seeds, "base": base, "runs": runs}
        full = args.steps in (None, SIZE_STEPS) and not args.conditions
        if args.add and args.conditions and args.steps in (None, SIZE_STEPS) and args.seeds == [0, 1, 2]:
            from benchmarks.common import add_runs
            add_runs("lab09", args.part, runs, environment())
            out = json.load(open(RESULTS))
            out[args.part]["base_last2_paid_wrong"] = {size: base_paid_wrong(name) for size, name in SIZES.items()}
            write(args.part, out[args.part])
            return
    else:
        conditions = args.conditions or list(TOOL_CONDITIONS)
        if args.add and conditions and set(conditions) <= set(TOOL_ADDED) and {0, 1, 2} <= set(args.seeds):
            from benchmarks.common import add_runs
            runs = run_all(tool_run, [(c, s, TOOL_ADDED[c]) for c in conditions for s in args.seeds], args.jobs,
                           args.threads)
            for r in runs:
                f = r["final"]["test"]
                print(f"{r['condition']:17s} seed {r['seed']}: test {f['pass@1']:.3f}  error {f['error']:.3f}  "
                      f"({r['seconds']:.0f} s)", flush=True)
            add_runs("lab09", args.part, runs, environment())
            return
        steps = args.steps or TOOL_CONFIG["steps"]
        base = base_tool_numbers()
        for name, b in base.items():
            print(f"{name:26s}: test {b['test']['pass@1']:.3f}  ood {b['ood']['pass@1']:.3f} / "
                  f"{b['ood'][f'pass@{OOD_K}']:.3f}", flush=True)
        runs = run_all(tool_run, [(c, s, steps) for c in conditions for s in args.seeds], args.jobs, args.threads)
        for r in runs:
            f = r["final"]
            print(f"{r['condition']:15s} seed {r['seed']}: test {f['test']['pass@1']:.3f}  ood "
                  f"{f['ood']['pass@1']:.3f} / {f['ood'][f'pass@{OOD_K}']:.3f}  miscopied operand "
                  f"{f['test'].get('operand_slip', 0):.3f}  ({r['seconds']:.0f} s)", flush=True)
        payload = {"config": TOOL_CONFIG, "test_k": TEST_K, "ood_k": OOD_K, "seeds": args.seeds, "base": base,
                   "runs": runs}
        full = steps == TOOL_CONFIG["steps"] and not args.conditions
    if not full:
        print("(a partial run: not written to the results)")
        return
    payload |= {"environment": environment()} | ({"jobs": args.jobs, "threads_per_run": args.threads}
                                                  if args.jobs > 1 else {})
    write(args.part, payload)


if __name__ == "__main__":
    main()

"""tests/run_cache.py: the test suite's run cache. Keys must tell apart what changes a result and nothing else; a hit
must give back exactly what computing would have (weights, history, random states, a callback's records);
it wraps the trainers from outside, in kernels started with the suite's IPython directory."""
import copy
import json
import os
import random
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import run_cache as cache
from utils.rl.grpo import GRPOConfig, group_advantages, policy_loss
from utils.rl.loop import train_grpo as uncached_train_grpo
from utils.tasks.arithmetic import load_split
from utils.verifiers.arithmetic import strict_reward

ROOT = Path(__file__).resolve().parent.parent
train_grpo = cache.cached_train_grpo(uncached_train_grpo)

TINY = dict(steps=3, batch_size=16, group_size=4, lr=1e-4, eval_every=0, seed=0)


@pytest.fixture
def on(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENV, str(tmp_path))
    return tmp_path


def test_off_by_default_and_when_told(monkeypatch):
    for value in ("off", "0", ""):
        monkeypatch.setenv(cache.ENV, value)
        assert cache.folder() is None and cache.key("x", 1) is None and cache.load(None) is None
    monkeypatch.delenv(cache.ENV)
    assert cache.key("x", 1) is None


def test_keys_tell_apart_what_matters(on):
    k = lambda *p: cache.key("kind", *p)
    assert k(1, "a", [1.0, 2]) == k(1, "a", [1.0, 2])
    assert k(1, "a") != k(1, "b") and k(1) != k(1.0) and k([1, 2]) != k((1, 2)) and k(1) != cache.key("other", 1)
    assert k({"a": 1, "b": 2}) == k({"b": 2, "a": 1})                     # dict order does not matter
    assert k(torch.zeros(3)) != k(torch.zeros(4)) != k(torch.zeros(4, dtype=torch.float64))
    assert k(np.arange(3)) == k(np.arange(3)) != k(np.arange(1, 4))
    assert k(GRPOConfig(**TINY)) != k(GRPOConfig(**{**TINY, "lr": 2e-4}))


def test_model_keyed_by_its_weights(on, shipped):
    model, tok = shipped
    twin = copy.deepcopy(model)
    assert cache.key("m", model, tok) == cache.key("m", twin, tok)
    with torch.no_grad():
        next(twin.parameters())[0, 0] += 1e-6
    assert cache.key("m", model, tok) != cache.key("m", twin, tok)


def test_same_model_from_another_folder_same_key(on, shipped, tmp_path):
    """The lab, the browser test and the Colab copy load the model from different paths."""
    import shutil

    from utils import BASE_MODEL_DIR
    from utils.models.policy import load_policy
    model, tok = shipped
    shutil.copytree(BASE_MODEL_DIR, tmp_path / "elsewhere")
    other, other_tok = load_policy(str(tmp_path / "elsewhere"))
    assert other.config._name_or_path != model.config._name_or_path
    assert cache.key("m", other.eval(), other_tok) == cache.key("m", model, tok)


def test_functions_keyed_by_code_closure_and_defaults(on):
    def make(p):
        return lambda x: x * p
    assert cache.key("f", make(2)) == cache.key("f", make(2)) != cache.key("f", make(3))
    assert cache.key("f", strict_reward) != cache.key("f", group_advantages)

    def a(x, scale=1.0):
        return x * scale

    def b(x, scale=2.0):
        return x * scale
    assert cache.key("f", a) != cache.key("f", b)


def test_unfingerprintable_means_uncached(on):
    assert cache.key("f", object()) is None
    assert cache.key("f", lambda x: x, open) is None      # a builtin: no code to hash
    assert cache.key("f", cache.Probe(lambda: 1 / 0, [()])) is None  # an unfinished function: run uncached


def test_probe_keys_pure_functions_by_what_they_compute(on):
    def written_differently(rewards, group_size, scale_std=True, baseline="mean"):
        r = torch.as_tensor(rewards, dtype=torch.float32).view(-1, group_size)
        adv = r - r.mean(1, keepdim=True)
        return (adv / (r.std(1, unbiased=False, keepdim=True) + 1e-4)).view(-1) if scale_std else adv.view(-1)

    def wrong(rewards, group_size, scale_std=True, baseline="mean"):
        return written_differently(rewards, group_size, scale_std) * 1.0001

    x = [(torch.tensor([1.0, 0, 0, 1, 1, 1, 0, 0]), 4, True, "mean")]
    ref = cache.key("adv", cache.Probe(group_advantages, x))
    assert cache.key("adv", cache.Probe(written_differently, x)) == ref
    assert cache.key("adv", cache.Probe(wrong, x)) != ref


def test_save_load_restores_global_and_held_random_states(on):
    torch.manual_seed(1); np.random.seed(1); random.seed(1)
    g = np.random.default_rng(5)
    k = cache.key("call", g)
    assert cache.load(k) is None                                    # a miss
    torch.rand(3); np.random.rand(2); random.random(); g.random(4)  # "the call" moves every stream
    cache.save(k, {"value": 42})
    after = (torch.rand(1), np.random.rand(), random.random(), g.random())

    torch.manual_seed(1); np.random.seed(1); random.seed(1)
    g2 = np.random.default_rng(5)
    k2 = cache.key("call", g2)
    assert k2 == k and cache.load(k2) == {"value": 42}              # a hit, and every stream where the call left it
    assert (torch.rand(1), np.random.rand(), random.random(), g2.random()) == after


@pytest.fixture(scope="module")
def train():
    ds = load_split("train", n=200)
    return list(ds["prompt"]), list(ds["answer"])


CALLS = []  # module level: a callback's closure is part of the key, and this list changes


def test_train_grpo_hit_is_the_computed_run(on, shipped, train, capsys):
    model, tok = shipped
    cfg = GRPOConfig(**TINY)
    runs = []
    CALLS.clear()

    def snapshot(policy, rec):                     # a callback that reads the weights; its values join the record
        CALLS.append(rec["step"])
        return {"weight_sum": sum(float(p.detach().double().sum()) for p in policy.parameters())}
    for _ in range(2):
        policy = copy.deepcopy(model)
        torch.manual_seed(123); np.random.seed(7); random.seed(7)
        hist = train_grpo(policy, tok, *train, strict_reward, cfg, progress=False, callback=snapshot)
        runs.append((hist, policy.state_dict(), torch.rand(2), np.random.rand(), random.random()))
    out = capsys.readouterr().out
    assert out.count("loaded from the run cache") == 1              # the first computed, the second loaded
    assert runs[0][0] == runs[1][0]
    final = snapshot(policy, {"step": 0})["weight_sum"]
    assert runs[0][0][-1]["weight_sum"] == final and CALLS[-1] == 0  # it saw the trained weights
    assert CALLS == [1, 2, 3, 0]                     # the hit did not call the callback again
    assert all(torch.equal(runs[0][1][n], runs[1][1][n]) for n in runs[0][1])
    assert torch.equal(runs[0][2], runs[1][2]) and runs[0][3:] == runs[1][3:]  # every global stream continues alike
    # nothing per step is kept: one entry, about one copy of the weights
    (entry,) = on.glob("*.pt")
    weights = sum(v.numel() * v.element_size() for v in model.state_dict().values())
    assert entry.stat().st_size < 1.5 * weights


SEEN = []  # module level, as CALLS


def test_a_callback_that_returns_nothing_is_never_replayed(on, shipped, train, capsys):
    """A callback that works by side effect alone (Lab 11 once appended its reports to a list of its own): a hit
    would not call it, and the list would stay empty. Such a run is computed every time, and the ledger says why;
    a callback that returns its values at some steps is stored as before."""
    model, tok = shipped
    cfg = GRPOConfig(**TINY)
    SEEN.clear()

    def side_effect(policy, rec):
        SEEN.append(rec["step"])

    def some_steps(policy, rec):
        if rec["step"] == 2:
            return {"two": 2}
    for _ in range(2):
        train_grpo(copy.deepcopy(model), tok, *train, strict_reward, cfg, progress=False, callback=side_effect)
    assert SEEN == [1, 2, 3, 1, 2, 3]                               # both calls ran it
    assert "loaded from the run cache" not in capsys.readouterr().out and not list(on.glob("*.pt"))
    ledger = [json.loads(line) for line in (on / cache.LEDGER).read_text().splitlines()]
    assert [e["outcome"] for e in ledger] == ["uncached", "uncached"] and "side effect" in ledger[0]["why"]
    hists = [train_grpo(copy.deepcopy(model), tok, *train, strict_reward, cfg, progress=False,
                        callback=some_steps) for _ in range(2)]
    assert "loaded from the run cache" in capsys.readouterr().out and hists[0] == hists[1]
    assert [r.get("two") for r in hists[1]] == [None, 2, None]


def test_global_random_states_are_part_of_the_key(on, shipped):
    """A reward function may read Python's or NumPy's global stream, so a run keys them."""
    model, tok = shipped
    keys = []
    for seed in (1, 1, 2):
        np.random.seed(seed); random.seed(1)
        keys.append(cache.key("run", model))
    np.random.seed(1); random.seed(2)
    keys.append(cache.key("run", model))
    assert keys[0] == keys[1] and len(set(keys)) == 3


def test_install_wraps_the_trainers_on_import(monkeypatch):
    """In a fresh interpreter (a kernel), install() then an import gives the cached trainers."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = ("import importlib.util as u, sys; s = u.spec_from_file_location('rc', sys.argv[1]); "
            "m = u.module_from_spec(s); s.loader.exec_module(m); m.install(); "
            "from utils.rl.loop import train_grpo; from utils.rl.trl_trainer import train_with_trl; "
            "from utils.runs.control import run_condition; import utils.runs.control as c; "
            "from utils.eval.metrics import sample_in_batches; import utils.eval.traces as cur; "
            "print(train_grpo.__wrapped__.__module__, train_with_trl.__wrapped__.__module__, "
            "c.train_grpo is train_grpo, sample_in_batches.__wrapped__.__module__, "
            "cur.sample_in_batches is sample_in_batches, "
            "__import__('utils.rl.launch').rl.launch.run.__wrapped__.__module__, "
            "__import__('utils.verifiers.attacks').verifiers.attacks.run_attacks.__wrapped__.__module__)")
    out = subprocess.run([sys.executable, "-c", code, str(root / "tests" / "run_cache.py")], cwd=root,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["utils.rl.loop", "utils.rl.trl_trainer", "True", "utils.eval.metrics", "True", "utils.rl.launch",
                   "utils.verifiers.attacks"]


def test_kernel_startup_dir_writes_an_ipython_startup_file(tmp_path):
    d = cache.kernel_startup_dir(tmp_path)
    (f,) = (tmp_path / "profile_default" / "startup").iterdir()
    assert d == str(tmp_path) and "install()" in f.read_text() and "run_cache.py" in f.read_text()


def test_train_grpo_learner_function_equal_to_reference_shares_the_run(on, shipped, train, capsys):
    model, tok = shipped
    cfg = GRPOConfig(**TINY)

    def my_loss(logp, old_logp, ref_logp, adv, mask, eps_low=0.2, eps_high=0.2, beta=0.0, loss_type="grpo",
                max_len=None):
        return policy_loss(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, loss_type, max_len)

    def off_by_a_bit(*args):
        return my_loss(*args) * 1.001

    for fn in (policy_loss, my_loss, off_by_a_bit):
        train_grpo(copy.deepcopy(model), tok, *train, strict_reward, cfg, progress=False, loss_fn=fn)
    assert capsys.readouterr().out.count("loaded from the run cache") == 1  # my_loss hit; off_by_a_bit trained


def test_time_limited_runs_are_not_cached(on, shipped, train, capsys):
    model, tok = shipped
    cfg = GRPOConfig(**{**TINY, "max_seconds": 600})
    for _ in range(2):
        train_grpo(copy.deepcopy(model), tok, *train, strict_reward, cfg, progress=False)
    assert "run cache" not in capsys.readouterr().out and not list(on.glob("*.pt"))
    want = [("uncached", "a time-limited run (max_seconds)")] * 2
    assert [(r["outcome"], r["why"]) for r in cache.ledger(on)] == want


def test_the_ledger_says_what_each_call_did(on, shipped, train):
    """The closing table's source: a miss (computed, with its seconds), then a hit; an uncacheable call says why."""
    model, tok = shipped
    cfg = GRPOConfig(**TINY)
    for _ in range(2):
        train_grpo(copy.deepcopy(model), tok, *train, strict_reward, cfg, progress=False)
    with open(__file__) as f:  # an open file cannot be fingerprinted
        train_grpo(copy.deepcopy(model), tok, *train, lambda c, a: strict_reward(c, a) if f else 0, cfg, progress=False)
    rows = cache.ledger(on)
    assert [(r["kind"], r["outcome"]) for r in rows] == [("train_grpo", "miss"), ("train_grpo", "hit"),
                                                         ("train_grpo", "uncached")]
    assert rows[0]["seconds"] > 0 and rows[1]["seconds"] == 0 and "TextIOWrapper" in rows[2]["why"]
    assert cache.ledger(on / "nowhere") == []


@pytest.mark.parametrize("trainer", ["train_grpo", "train_with_trl"])
def test_every_argument_of_a_trainer_but_progress_is_in_the_key(monkeypatch, trainer):
    """A new trainer argument left out of the key would let two different runs share one entry."""
    import importlib
    import inspect

    fn = getattr(importlib.import_module("utils.rl.loop" if trainer == "train_grpo" else "utils.rl.trl_trainer"),
                 trainer)
    read = set()

    class Args(dict):
        def __getitem__(self, k):
            read.add(k)
            return None
    monkeypatch.setattr(cache, "_probes", lambda *a: ())
    getattr(cache, f"{trainer}_parts")(Args())
    assert read | {"progress"} == set(inspect.signature(inspect.unwrap(fn)).parameters)


def test_lora_runs_are_never_cached(on):
    """A LoRA run wraps the policy in place and Lab 08 reads its trainer: it is computed every time."""
    class Args(dict):
        def __getitem__(self, k):
            return self.get(k)
    assert cache.key("train_with_trl", *cache.train_with_trl_parts(Args())) is not None
    assert cache.key("train_with_trl", *cache.train_with_trl_parts(Args(peft_config="a LoraConfig"))) is None


def test_a_datasets_column_is_keyed_by_every_value(on):
    """A datasets Column's repr shows its first five rows only: two columns alike there must not share a key."""
    from datasets import Dataset

    a = Dataset.from_dict({"p": ["1+1=", "2+2=", "3+3=", "4+4=", "5+5=", "6+6="]})["p"]
    b = Dataset.from_dict({"p": ["1+1=", "2+2=", "3+3=", "4+4=", "5+5=", "7+7="]})["p"]
    assert repr(a) == repr(b)
    assert cache.key("k", a) != cache.key("k", b)
    assert cache.key("k", a) == cache.key("k", list(a))


def test_the_thread_count_is_part_of_the_key(on):
    """A CPU run's bits depend on torch's thread count, so a run is not handed across thread counts."""
    threads = torch.get_num_threads()
    try:
        keys = []
        for n in (1, 2, 1):
            torch.set_num_threads(n)
            keys.append(cache.key("run", 1))
    finally:
        torch.set_num_threads(threads)
    assert keys[0] == keys[2] != keys[1]


def test_the_cpu_kernels_are_part_of_the_key(on, monkeypatch):
    """A run's bits depend on which kernels torch runs (tools/isa.py): a knob that forces others starts a new key."""
    monkeypatch.delenv("MKL_CBWR", raising=False)
    plain = cache.key("run", 1)
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
    assert cache.key("run", 1) != plain
    monkeypatch.delenv("MKL_CBWR")
    assert cache.key("run", 1) == plain


def test_lab03s_fallback_keys_as_its_solution(on):
    """Lab 03 trains with my_random_reward: the lab's unwritten stub falls back to the exercise's answer
    (exercises.lab03.answer_random_reward), which keys as the solution notebook's own function, so the browser
    pass loads the two random-reward runs its nbval pass trained instead of training them again (86 s at 9888272).
    The library's random_reward (the same coin inside the verifier contract) keys otherwise."""
    import json
    import re

    from utils.notebook.exercises.lab03 import answer_random_reward
    from utils.verifiers.spurious import random_reward

    nb = json.load(open(os.path.join(ROOT, "solutions", "03_random_reward_control.ipynb")))
    cell = next("".join(c["source"]) for c in nb["cells"] if "def my_random_reward" in "".join(c["source"]))
    space = {"__name__": "__main__", "np": np}   # the notebook's globals, as its kernel has them
    exec(re.sub(r"\s*# (BEGIN|END) SOLUTION", "", cell), space)
    solution = space["my_random_reward"]
    assert solution.__module__ == "__main__"
    assert cache.key("run", solution(0.3, 1001)) == cache.key("run", answer_random_reward(0.3, 1001))
    assert cache.key("run", solution(0.3, 1001)) != cache.key("run", solution(0.3, 1002))     # another stream
    assert cache.key("run", solution(0.3, 1001)) != cache.key("run", random_reward(0.3, 1001))


def test_a_second_process_waits_for_the_run_being_computed(on):
    """computing(k) holds k's lock: whoever asks for the same run meanwhile waits, then finds it stored."""
    import threading
    import time

    k = cache.key("run", 7)
    started, seen = threading.Event(), {}

    def first():
        with cache.computing(k):
            started.set()
            time.sleep(0.5)
            cache.save(k, "the run")

    t = threading.Thread(target=first)
    t.start()
    started.wait()
    t0 = time.time()
    with cache.computing(k):
        seen["waited"], seen["value"] = time.time() - t0, cache.load(k)
    t.join()
    assert seen["waited"] >= 0.3 and seen["value"] == "the run"
    with cache.computing(None):  # the cache off or an unkeyable call: no lock, nothing written
        pass


def test_sampling_hit_is_what_sampling_gave_and_leaves_random_states_alone(on, shipped):
    from utils.eval.metrics import sample_in_batches

    model, tok = shipped
    cached = cache.cached_sample_in_batches(sample_in_batches)
    prompts = ["12+34=", "5-7=", "40+2="]
    want = list(sample_in_batches(model, tok, prompts, k=4, seed=3, batch_size=8))
    first = list(cached(model, tok, prompts, k=4, seed=3, batch_size=8))           # computed, then stored
    torch.manual_seed(9); np.random.seed(9); random.seed(9)
    states = (torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate())
    second = list(cached(model, tok, prompts, k=4, seed=3, batch_size=8))          # loaded
    assert len(list(on.glob("*.pt"))) == 1
    for got in (first, second):
        assert [i for i, _ in got] == [i for i, _ in want] == [0, 2]
        assert all(g.texts == w.texts and torch.equal(g.completion_ids, w.completion_ids)
                   and torch.equal(g.logprobs, w.logprobs) for (_, g), (_, w) in zip(got, want))
    assert torch.equal(torch.get_rng_state(), states[0]) and (np.random.get_state()[1] == states[1]).all()
    assert random.getstate() == states[2]
    list(cached(model, tok, prompts, k=4, seed=4, batch_size=8))
    assert len(list(on.glob("*.pt"))) == 2                                          # another seed, another entry
    next(cached(model, tok, prompts, k=2, seed=3, batch_size=8))                     # stopped early: nothing stored
    assert len(list(on.glob("*.pt"))) == 2
    assert [r["outcome"] for r in cache.ledger(on)] == ["miss", "hit", "miss"]      # the early stop: no line


def test_a_function_decorated_with_a_grad_mode_is_keyed(on):
    """Lab 04 hands over a callback that calls a @torch.no_grad() function: keyed by the decorator's kind (its
    closure holds the context manager), not refused as unfingerprintable, and told apart from another kind."""
    def make(mode):
        @mode
        def f(x):
            return x + 1
        return lambda: f(1)
    keys = [cache.key("t", make(m)) for m in (torch.no_grad(), torch.no_grad(), torch.enable_grad(),
                                              torch.inference_mode(), torch.inference_mode(False))]
    assert None not in keys and keys[0] == keys[1] and len(set(keys)) == 4


def test_a_launched_run_is_computed_once_and_its_files_come_back(on, tmp_path):
    """utils.rl.launch.run through the cache (a fake run, the real signature): the second identical call
    (another out folder, another timeout) returns the first's value and writes the files it left; another
    argument computes again; the ledger says which was which and the worker each came from."""
    calls = []

    def run(out, timeout=600, **kw):
        calls.append(kw)
        (tmp_path / out).mkdir(exist_ok=True)
        (tmp_path / out / "result.json").write_text(f'{{"steps": {kw["steps"]}}}')
        return [{"w": torch.full((2,), float(kw["steps"]))}], {"steps": kw["steps"]}

    cached = cache.cached_launch_run(run)
    first = cached(tmp_path / "a", steps=3, processes=2)
    again = cached(tmp_path / "b", timeout=60, steps=3, processes=2)
    assert len(calls) == 1 and again[1] == first[1] and torch.equal(again[0][0]["w"], first[0][0]["w"])
    assert (tmp_path / "b" / "result.json").read_text() == '{"steps": 3}'
    cached(tmp_path / "c", steps=4, processes=2)
    assert len(calls) == 2
    rows = [r for r in cache.ledger(on) if r["kind"] == "launch.run"]
    assert [r["outcome"] for r in rows] == ["miss", "hit", "miss"] and all("worker" in r for r in rows)


def test_the_attack_table_is_measured_every_time_and_said_so(on):
    """run_attacks is never loaded: each call runs (the wall around this copy is what it measures) and
    leaves an 'uncached' line with its reason, raising or not."""
    calls = []

    def run_attacks(cases=None, wall=None, audit_hook=True, timeout_s=1.5):
        calls.append(wall)
        if wall == "broken":
            raise RuntimeError("no wall")
        return [{"id": "a", "escaped": False}]

    noted = cache.noted_run_attacks(run_attacks)
    assert noted(wall="isolated") == noted(wall="isolated") and calls == ["isolated", "isolated"]
    with pytest.raises(RuntimeError):
        noted(wall="broken")
    rows = [r for r in cache.ledger(on) if r["kind"] == "run_attacks"]
    assert [r["outcome"] for r in rows] == ["uncached"] * 3 and "this copy of the course" in rows[0]["why"]


def test_the_lock_is_what_the_setup_cell_leaves_on_colab_where_a_run_is_decided():
    """CI's environment (the lock's) and the browser pass's Colab kernel share every run only if they key alike:
    the same version of each library a key names (run_cache.KEYED_LIBRARIES) and the same Python minor version (a
    function is keyed by its bytecode). The lock holds, for each, the version the setup cell leaves on Colab:
    Colab's own where it satisfies requirements.txt (the setup cell moves nothing else), the lock's where it does
    not (TRL, which Colab lacks, and datasets, which TRL moves). tests/test_browser.py checks the built kernel."""
    from packaging.requirements import Requirement
    sys.path.insert(0, str(ROOT / "tools"))
    import colab_runtime

    text = (ROOT / "requirements-lock.txt").read_text()
    lock = {colab_runtime.norm(n): v for n, v in (ln.split("==") for ln in text.split() if "==" in ln)}
    ranges = {colab_runtime.norm(r.name): r.specifier for r in (
        Requirement(ln.split("#")[0]) for ln in (ROOT / "requirements.txt").read_text().splitlines()
        if ln.split("#")[0].strip())}
    colab = {colab_runtime.norm(n): v for n, v in colab_runtime.COLAB.items()}
    for name in cache.KEYED_LIBRARIES:
        have = colab.get(name)
        kept = have is not None and (name not in ranges or ranges[name].contains(have))
        if kept:
            assert lock[name] == have, f"{name}: the lock has {lock[name]}, Colab {have}"
        else:
            assert name in lock, f"{name} is not in the lock"
    assert "trl" not in colab and "datasets" in colab and not ranges["datasets"].contains(colab["datasets"])
    made_with = text.split("Made with Python ")[1]
    assert made_with.startswith(colab_runtime.COLAB_PYTHON + "."), made_with[:20]


def test_the_stand_ins_python_is_the_same_from_inside_a_virtual_environment(tmp_path, monkeypatch):
    """The Colab stand-in is stamped with the Python it was built with. CI builds it from outside its own environment
    and the suite asks for it from inside (a venv of that same Python, first on PATH): both must name the same
    interpreter, or the suite builds the 5 GB stand-in again mid-run (it did, at 5b06fa0: 109 s)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import colab_runtime

    outside = colab_runtime.find_python()
    if outside is None:
        pytest.skip(f"no Python {colab_runtime.COLAB_PYTHON} here")
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / f"python{colab_runtime.COLAB_PYTHON}").symlink_to(outside)
    monkeypatch.setenv("PATH", f"{venv_bin}:{os.environ['PATH']}")
    assert colab_runtime.find_python() == outside

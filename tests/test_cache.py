"""utils.cache: the opt-in run cache. Keys must tell apart what changes a result and nothing else; a hit
must give back exactly what computing would have (weights, history, random states, callbacks)."""
import copy
import random

import numpy as np
import pytest
import torch

from utils import cache
from utils.grpo import GRPOConfig, group_advantages, policy_loss, train_grpo
from utils.task import load_split
from utils.verifiers import strict_reward

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

    from utils.policy import load_policy
    from utils import BASE_MODEL_DIR
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


def test_train_grpo_hit_is_the_computed_run(on, shipped, train, capsys):
    model, tok = shipped
    cfg = GRPOConfig(**TINY)
    seen, runs = [], []
    for _ in range(2):
        policy, got = copy.deepcopy(model), []

        def record(rec):                                            # what a callback sees: the record and the weights
            got.append((rec["step"], float(next(policy.parameters()).detach().sum())))
        torch.manual_seed(123)
        hist = train_grpo(policy, tok, *train, strict_reward, cfg, progress=False, callback=record)
        runs.append((hist, policy.state_dict(), torch.rand(2)))
        seen.append(got)
    out = capsys.readouterr().out
    assert out.count("loaded from the run cache") == 1              # the first computed, the second loaded
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(runs[0][1][n], runs[1][1][n]) for n in runs[0][1])
    assert torch.equal(runs[0][2], runs[1][2])                       # the global torch stream continues alike
    assert seen[0] == seen[1] and len(seen[0]) == cfg.steps         # the callback replayed on each step's weights


def test_train_grpo_learner_function_equal_to_reference_shares_the_run(on, shipped, train, capsys):
    model, tok = shipped
    cfg = GRPOConfig(**TINY)

    def my_loss(logp, old_logp, ref_logp, adv, mask, eps_low=0.2, eps_high=0.2, beta=0.0, loss_type="grpo",
                max_len=None):
        return policy_loss(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, loss_type, max_len)[0]

    def off_by_a_bit(*args):
        return my_loss(*args) * 1.001

    for fn in (None, my_loss, off_by_a_bit):
        train_grpo(copy.deepcopy(model), tok, *train, strict_reward, cfg, progress=False, loss_fn=fn)
    assert capsys.readouterr().out.count("loaded from the run cache") == 1  # my_loss hit; off_by_a_bit trained


def test_time_limited_runs_are_not_cached(on, shipped, train, capsys):
    model, tok = shipped
    cfg = GRPOConfig(**{**TINY, "max_seconds": 600})
    for _ in range(2):
        train_grpo(copy.deepcopy(model), tok, *train, strict_reward, cfg, progress=False)
    assert "run cache" not in capsys.readouterr().out and not list(on.iterdir())

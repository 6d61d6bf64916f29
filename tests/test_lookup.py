"""Lab 09's lookup task (utils.tasks.lookup), the calculator's table, and the grounding check, by hand."""
import random

import pytest
import torch

from utils.models.policy import char_tokenizer
from utils.tasks import lookup
from utils.tasks.tools import ERROR, Calculator
from utils.verifiers.tools import grounded_reward


@pytest.fixture(scope="module")
def tok():
    return char_tokenizer(lookup.ALPHABET, max_length=64)


def ids(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


def test_the_worlds_change_the_facts_they_say_and_no_others():
    w0, w1, w2 = lookup.world(0), lookup.world(1), lookup.world(2)
    assert set(w0) == set(lookup.KEYS) and len(lookup.KEYS) == 100 and all(100 <= v <= 999 for v in w2.values())
    assert {k for k in lookup.KEYS if w0[k] != w1[k]} == lookup.CHANGED_AT_1          # 25 known facts by RL time
    assert {k for k in lookup.KEYS if w1[k] != w2[k]} == lookup.CHANGED_AT_2          # the other 25 later
    assert len(lookup.CHANGED_AT_1) == len(lookup.CHANGED_AT_2) == 25 and len(lookup.KNOWN) == 50
    assert lookup.CHANGED_AT_1 | lookup.CHANGED_AT_2 == lookup.KNOWN
    assert lookup.world(1) == w1                                                       # the same every call
    assert sum(len(g) for g in lookup.GROUPS.values()) == 100
    with pytest.raises(ValueError, match="version"):
        lookup.world(3)


def test_splits_share_no_added_number_and_answer_in_their_world():
    test, test0 = lookup.load_split("test"), lookup.load_split("test", version=0)
    train = lookup.load_split("train", per_key=2)
    assert len(train) == 200 and len(test) == 100 * len(lookup.SPLITS["test"])
    assert not set(train["a"]) & set(test["a"]) and not set(lookup.SPLITS["valid"]) & set(lookup.SPLITS["test"])
    row = test[0]
    assert row["prompt"] == f"{row['key']}+{row['a']}:" and row["answer"] == str(lookup.world(1)[row["key"]] + row["a"])
    changed = [i for i in range(100) if test[i]["answer"] != test0[i]["answer"]]
    assert {test[i]["key"] for i in changed} == lookup.CHANGED_AT_1
    assert lookup.group_of(next(iter(lookup.CHANGED_AT_2))) == "known, changed after RL"
    with pytest.raises(ValueError, match="not a key"):
        lookup.group_of("#100")
    with pytest.raises(ValueError, match="not a split"):
        lookup.load_split("ood")


def test_episodes_by_kind():
    table = {"#37": 615}
    _, text, loss = lookup.episode(random.Random(0), "#37", 478, table, noise={"right": 1})
    assert text == "?#37=615 ?615+478=1093 >1093"
    assert "".join(c for c, m in zip(text, loss) if not m) == "615 1093 "              # the replies: no loss
    _, text, _ = lookup.episode(random.Random(0), "#37", 478, table, memory=True, noise={"right": 1})
    assert text == "?615+478=1093 >1093"
    _, text, _ = lookup.episode(random.Random(0), "#37", 478, table, noise={"operand": 1})
    x = text.split("?")[2].split("+")[0]
    assert x != "615" and sum(p != q for p, q in zip(x, "615")) == 1 and text.endswith(f">{int(x) + 478}")
    _, text, _ = lookup.episode(random.Random(0), "#37", 478, table, noise={"answer": 1})
    assert text.startswith("?#37=615 ?615+478=1093 >") and not text.endswith(">1093")


def test_pretraining_answers_from_memory_only_known_keys_in_the_first_world():
    rng, w0 = random.Random(0), lookup.world(0)
    seen = [lookup.pretrain_example(rng) for _ in range(2000)]
    memory = [p for p, c, _ in seen if not c.startswith("?#")]
    assert all(p.split("+")[0] in lookup.KNOWN for p in memory)
    assert 0.2 < len(memory) / len(seen) < 0.3                                          # half of half the keys
    for p, c, _ in seen:
        key, a = p[:-1].split("+")
        if c.startswith("?#"):
            assert c.startswith(f"?{key}={w0[key]} ")
    with pytest.raises(ValueError, match="p_memory"):
        lookup.pretrain_example(rng, p_memory=2)


def test_the_calculator_looks_up_its_table_and_switched_off_answers_errors(tok):
    env = Calculator(tok, n_rows=3, table={"#37": 615})
    assert tok.decode(env(0, ids(tok, "?#37="))) == "615 "
    assert tok.decode(env(0, ids(tok, "?#37=615 ?615+478="))) == "1093 "              # the calculator still on
    assert tok.decode(env(1, ids(tok, "?#38="))) == ERROR + " "                         # a key the table lacks
    off = Calculator(tok, n_rows=1, table={})
    assert tok.decode(off(0, ids(tok, "?#37="))) == ERROR + " " and tok.decode(off(0, ids(tok, "?#37=! ?1+2="))) == "3 "
    plain = Calculator(tok, n_rows=1)
    assert tok.decode(plain(0, ids(tok, "?#37="))) == ERROR + " "                       # no table: not a lookup
    with pytest.raises(ValueError, match="table"):
        Calculator(tok, n_rows=1, table=[615])
    with pytest.raises(ValueError, match="table"):
        Calculator(tok, n_rows=1, table={"#37": "615"})


def test_the_grounding_check_pays_only_an_answer_read_from_the_source():
    texts = ["?#37=615 ?615+478=1093 >1093",   # looked up, added, copied: paid
             "?615+478=1093 >1093",            # right from memory: not paid
             "?#38=204 ?615+478=1093 >1093",   # another key looked up: not paid
             "?#37=615 ?615+478=1093 >1094",   # a miscopied answer: not paid
             "?#37=615 ?651+478=1129 >1129",   # the fact miscopied into the sum: not paid
             "?#37=! ?615+478=1093 >1093",     # the lookup switched off, memory: not paid
             "?#37=615 ?#37=616 ?616+478=1094 >1094",  # the last reply of the key is read
             None]
    got = grounded_reward(texts, key=["#37"] * len(texts), a=[478] * len(texts))
    assert got == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    assert grounded_reward(texts[:1], answer=["5"], key=["#37"], a=[478]) == [1.0]     # the answer column unread
    with pytest.raises(ValueError, match="`key` column"):
        grounded_reward(texts, a=[478] * len(texts))
    with pytest.raises(ValueError, match="`a` column"):
        grounded_reward(texts, key=["#37"] * len(texts))


def test_a_lookup_rollout_trains_with_its_table(tok):
    from utils.rl.grpo import GRPOConfig
    from utils.rl.loop import train_grpo
    from utils.rl.rollout import ToolRollout
    from utils.runs.build_base_model import make_model
    from utils.verifiers.traces import outcome_reward
    torch.manual_seed(0)
    model = make_model("gpt2", dict(n_layer=1, n_embd=32, n_head=2), tok, 64)
    rows = lookup.load_split("train", per_key=1)
    cfg = GRPOConfig(steps=2, batch_size=8, group_size=4, max_new_tokens=12, seed=0, eval_every=0, track_kl=False)
    hist = train_grpo(model, tok, rows["prompt"], rows["answer"], outcome_reward, cfg,
                      rollout=ToolRollout(table=lookup.world(1)), progress=False)
    assert len(hist) == 2 and all("tool_calls" in h for h in hist)


def test_lookup_metrics_by_hand(tok, monkeypatch):
    from datasets import Dataset

    import utils.eval.tools as et
    from utils.runs.build_base_model import make_model
    rows = Dataset.from_list([{"prompt": "#37+478:", "answer": "1093", "key": "#37", "a": 478, "group": "g1"},
                              {"prompt": "#05+10:", "answer": "210", "key": "#05", "a": 10, "group": "g2"}])
    texts = ["?#37=615 ?615+478=1093 >1093",   # g1: looked up, right, grounded
             "?615+478=1093 >1093",            # g1: memory, right
             "?#05=200 ?200+10=210 ?9+9=",     # g2: looked up, cut before an answer
             "?#06=300 ?300+10=310 >310"]      # g2: another key looked up: not memory, not own lookup, wrong
    monkeypatch.setattr(et, "evaluate", lambda *a, **k: {"pass@1": 0.5, "texts": texts})
    torch.manual_seed(0)
    model = make_model("gpt2", dict(n_layer=1, n_embd=32, n_head=2), tok, 64)
    m = et.lookup_metrics(model, tok, rows, {}, k=2, max_new_tokens=8)
    assert m["g1"] == {"pass@1": 1.0, "looked_up": 0.5, "memory": 0.5, "grounded": 0.5, "answered": 1.0,
                       "memory_right": 1.0, "lookup_right": 1.0}
    assert m["g2"] == {"pass@1": 0.0, "looked_up": 0.5, "memory": 0.0, "grounded": 0.0, "answered": 0.5,
                       "memory_right": None, "lookup_right": 0.0}
    assert m["all"] == {"pass@1": 0.5, "looked_up": 0.5, "memory": 0.25, "grounded": 0.25, "answered": 0.75,
                        "memory_right": 1.0, "lookup_right": 0.5}
    with pytest.raises(ValueError, match="group"):
        et.lookup_metrics(model, tok, rows.remove_columns("group"), {}, k=2, max_new_tokens=8)

"""Lab 09's lookup task: facts only the environment knows (issue 57 item 5). A calculator brings computation; a
lookup brings information, which no amount of thinking recovers.

The environment holds a table of 100 facts, keys '#00' to '#99', each a 3-digit number. A problem asks for a fact
plus a number: '#37+478:' is table['#37'] + 478. The policy can look the fact up (a call whose expression is the
key: utils.tasks.tools.Calculator(table=...) answers it), then add with the calculator:

    #37+478: ?#37=615 ?615+478=1093 >1093
             ^^^^     ^^^^^^^^^            the policy's two calls
                 ^^^^          ^^^^^       the environment's replies (no loss)
                                    ^^^^^  the policy's answer

or, for a fact it has memorised, skip the lookup and write the number from memory: '?615+478=1093 >1093'. The
pre-training text (pretrain_example) holds lookup episodes for every key and, for the half of the keys in KNOWN,
answers from memory as often. The world then moves on: world(1), the table at RL time, has changed half of the
known facts (CHANGED_AT_1); world(2), a later table, has changed the other known half too (CHANGED_AT_2). A fact
the model memorised in world 0 is stale once it changes; the lookup always reads the environment's current table.
"""
import random

from datasets import Dataset

from utils import checks
from utils.tasks.tools import ALPHABET as TOOL_ALPHABET
from utils.tasks.tools import CALL, END, _slip

ALPHABET = TOOL_ALPHABET + "#"
KEYS = tuple(f"#{i:02d}" for i in range(100))
TABLE_SEED = 909
_order = random.Random(TABLE_SEED + 1).sample(KEYS, len(KEYS))
KNOWN = frozenset(_order[:50])                 # keys the pre-training text answers from memory too
CHANGED_AT_1 = frozenset(sorted(KNOWN)[::2])   # known keys whose fact changed by RL time (25)
CHANGED_AT_2 = KNOWN - CHANGED_AT_1            # the other known keys: changed later (25)
GROUPS = {"known, changed before RL": CHANGED_AT_1, "known, changed after RL": CHANGED_AT_2,
          "never memorised": frozenset(KEYS) - KNOWN}
P_MEMORY = 0.5                                 # the share of a known key's pre-training episodes from memory
NOISE = {"right": 0.7, "operand": 0.15, "answer": 0.15}   # as utils.tasks.tools.TOOL_NOISE
SPLITS = {"train": range(10, 1000, 3), "valid": range(12, 1000, 3), "test": range(11, 1000, 3)}   # a, never shared


def world(version=0):
    """The environment's table {key: 3-digit int} at `version`: 0 at pre-training, 1 at RL time (CHANGED_AT_1's facts
    changed), 2 later (CHANGED_AT_2's too). A changed fact is another 3-digit number, never the old one."""
    version = checks.number("world", "version", version, lo=0, hi=2, integer=True)
    rng = random.Random(TABLE_SEED)
    table = {k: rng.randint(100, 999) for k in KEYS}
    for v, changed in ((1, CHANGED_AT_1), (2, CHANGED_AT_2)):
        rng = random.Random(TABLE_SEED + 10 * v)
        for k in sorted(changed):
            new = rng.randint(100, 998)
            table[k] = new + (new >= table[k]) if version >= v else table[k]
    return table


def group_of(key):
    """The GROUPS name of `key` ('#37'), or ValueError for a key the table does not hold."""
    for name, keys in GROUPS.items():
        if isinstance(key, str) and key in keys:
            return name
    raise ValueError(f"group_of: {key!r} is not a key of the table (KEYS: '#00' to '#99')")


def format_prompt(key, a):
    """'#37+478:' for key '#37' and a = 478."""
    if key not in KEYS:
        raise ValueError(f"format_prompt: key {key!r} is not a key of the table (KEYS: '#00' to '#99')")
    return f"{key}+{checks.number('format_prompt', 'a', a, lo=0, hi=10**6, integer=True)}:"


def load_split(name, version=1, per_key=None):
    """The rows of split `name` ('train', 'valid' or 'test'), answers in world(version): prompt, answer (str), key,
    a, group. per_key: the first that many values of a for each key (all of SPLITS[name], 330, by default)."""
    if not isinstance(name, str) or name not in SPLITS:
        raise ValueError(f"load_split: name {name!r} is not a split; allowed: {sorted(SPLITS)}")
    table = world(version)
    values = list(SPLITS[name])[:checks.number("load_split", "per_key", per_key, lo=1, integer=True)
                                if per_key is not None else None]
    rows = [(k, a) for a in values for k in KEYS]
    return Dataset.from_dict({"prompt": [format_prompt(k, a) for k, a in rows],
                              "answer": [str(table[k] + a) for k, a in rows], "key": [k for k, _ in rows],
                              "a": [a for _, a in rows], "group": [group_of(k) for k, _ in rows]})


def episode(rng, key, a, table, memory=False, noise=None):
    """(kind, completion, loss) for key + a: a lookup then a call to the calculator, or (memory=True) the
    calculator alone with the fact written from memory; its kind drawn from `noise` (NOISE's shares by default):
    'operand' miscopies one digit of the fact into the calculator's call, 'answer' one digit of the answer. loss is
    one 0/1 per character: 0 on the environment's replies."""
    noise = noise or NOISE
    kind = rng.choices(list(noise), weights=list(noise.values()))[0]
    value = str(table[key])
    parts, loss = [], []
    if not memory:
        call, reply = f"{CALL}{key}{END}", value + " "
        parts += [call, reply]
        loss += [1] * len(call) + [0] * len(reply)
    x = _slip(rng, value) if kind == "operand" else value
    call, reply = f"{CALL}{x}+{a}{END}", f"{int(x) + a} "
    answer = _slip(rng, reply.strip()) if kind == "answer" else reply.strip()
    parts += [call, reply, ">" + answer]
    loss += [1] * len(call) + [0] * len(reply) + [1] * (1 + len(answer))
    return kind, "".join(parts), loss


def pretrain_example(rng, p_memory=P_MEMORY):
    """(prompt, completion, loss) for the lookup model's pre-training, in world(0): a key and a train value of a
    drawn at random; for a KNOWN key, from memory with probability p_memory, else a lookup episode."""
    p_memory = checks.number("pretrain_example", "p_memory", p_memory, lo=0, hi=1)
    key, a = rng.choice(KEYS), rng.choice(SPLITS["train"])
    memory = key in KNOWN and rng.random() < p_memory
    return (format_prompt(key, a), *episode(rng, key, a, _WORLD0, memory)[1:])


_WORLD0 = world(0)

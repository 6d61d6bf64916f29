"""A proposer that writes the solver's problems (Lab 12): self-play's other half, on the arithmetic task's grammar.

Each step the proposer chooses which kinds of problem the solver (Lab 01's loop) trains on; the solver's groups
then pay the proposer for each problem by how learnable it was, read from the group's pass rate p (the share of
its G completions the verifier passed):

    learnability(p, "azr")    1 - p where 0 < p < 1, else 0: Absolute Zero's proposer reward (arXiv 2505.03335):
                              a problem the solver always or never solves teaches it nothing; among the rest, the
                              harder pays more
    learnability(p, "rzero")  1 - 2|p - 1/2|: R-Zero's uncertainty reward (arXiv 2508.05004), highest where the
                              solver is right half the time

    (the grammar, utils.tasks.arithmetic.KINDS: (digits of a, digits of b, operator), digits 1 to 3, 18 kinds)
    expected_learnability(p, kind, group_size)   its mean over a group of group_size samples each right with
                              chance p (binomially many right): what a proposer is paid, on average, for a kind
                              the solver passes at rate p. With G = 8, AZR's peaks near p = 0.26, not at the
                              hardest kind; R-Zero's at p = 1/2
    band_share(p, band, group_size)   the chance that such a group's pass rate falls in band = (lo, hi)
    fixed_solver_run(rates, ...)      a Proposer trained against a solver that never learns (each kind's pass rate,
                              or its problems' rates, fixed): where its reward alone sends it, in a fraction of
                              a second
    Proposer                  a softmax policy over the kinds, trained by REINFORCE with the step's mean
                              learnability as its baseline (REINFORCE, Williams 1992; AZR's proposer is an LLM,
                              here it is 18 logits)
    ProposerRollout           GroupRollout whose prompts the proposer chooses (with an optional anchor: a share
                              of each step's prompts drawn from a human seed set), each step's groups paying it

The proposer never sees the answers: it sees only kinds and pass rates. The pass rate is the run's reward_fn
(the strict verifier, or a label-free reward: Lab 12's third part).
"""
from dataclasses import dataclass, field

import numpy as np
import torch

from utils import checks
from utils.rl.rollout import GroupRollout
from utils.tasks.arithmetic import KINDS

REWARDS = ("azr", "rzero")


def learnability(pass_rate, kind="azr"):
    """The proposer's reward for one problem whose solver group passed at rate `pass_rate` (module docstring)."""
    p = checks.number("learnability", "pass_rate", pass_rate, lo=0, hi=1)
    if kind not in REWARDS:
        raise ValueError(f"learnability: kind must be one of {REWARDS}, got {checks._short(kind)}")
    if kind == "azr":
        return 1.0 - p if 0.0 < p < 1.0 else 0.0
    return 1.0 - 2.0 * abs(p - 0.5)


def _group_outcomes(where, p, group_size):
    """(p as a [K] array, the binomial probabilities [K, G + 1] of j = 0..G right in a group of G)."""
    from math import comb

    g = checks.number(where, "group_size", group_size, lo=1, hi=1_000, integer=True)
    p = checks.array(where, "p", p, dims=(0, 1))
    if p.size == 0 or np.any((p < 0) | (p > 1)):
        raise ValueError(f"{where}: p must be a pass rate in [0, 1] or a non-empty list of them, got {p}")
    j = np.arange(g + 1)
    pmf = np.array([comb(g, int(i)) for i in j]) * np.power.outer(p, j) * np.power.outer(1 - p, g - j)  # [.., G+1]
    return p, j / g, pmf


def expected_learnability(p, kind="azr", group_size=8):
    """The mean of learnability(j / G, kind) over j ~ Binomial(G, p): a float for a float p, else an array."""
    p, rates, pmf = _group_outcomes("expected_learnability", p, group_size)
    if kind not in REWARDS:
        raise ValueError(f"expected_learnability: kind must be one of {REWARDS}, got {checks._short(kind)}")
    out = pmf @ np.array([learnability(float(r), kind) for r in rates])
    return float(out) if np.ndim(out) == 0 else out


def band_share(p, band=(0.0, 1.0), group_size=8):
    """The chance that a group of G samples, each right with chance p, has a pass rate j / G in [lo, hi]."""
    lo, hi = (checks.number("band_share", f"band[{i}]", v, lo=0, hi=1) for i, v in enumerate(
        checks.sequence("band_share", "band", band, length=2)))
    if lo > hi:
        raise ValueError(f"band_share: band=({lo}, {hi}) must have lo <= hi")
    p, rates, pmf = _group_outcomes("band_share", p, group_size)
    out = pmf @ ((rates >= lo - 1e-12) & (rates <= hi + 1e-12)).astype(float)
    return float(out) if np.ndim(out) == 0 else out


def fixed_solver_run(rates, kind="azr", lr=1.0, steps=200, batch=32, group_size=8, seed=0):
    """A Proposer (uniform at the start, learning rate lr) over len(rates) kinds, trained for `steps` steps against a
    solver that never learns. rates[k]: kind k's pass rate (every problem of it equally hard) or a list of its
    problems' pass rates (each draw of the kind picks one of them uniformly). Each step it draws `batch` kinds; each
    drawn problem's group of group_size samples has Binomial(group_size, its rate) right, and it is paid
    learnability(pass rate, kind). Returns [steps + 1, K]: its probabilities before each step and after the last.
    Seeded by `seed` (numpy)."""
    where = "fixed_solver_run"
    rates = checks.sequence(where, "rates", rates, of="kinds")
    per_kind = [checks.array(where, f"rates[{k}]", r, dims=(0, 1)).reshape(-1) for k, r in enumerate(rates)]
    if not per_kind or any(not len(r) or np.any((r < 0) | (r > 1)) for r in per_kind):
        raise ValueError(f"{where}: rates must hold, for each kind, a pass rate in [0, 1] or a non-empty list of "
                         f"them")
    if kind not in REWARDS:
        raise ValueError(f"{where}: kind must be one of {REWARDS}, got {checks._short(kind)}")
    steps = checks.number(where, "steps", steps, lo=0, hi=1_000_000, integer=True)
    batch = checks.number(where, "batch", batch, lo=1, hi=1_000_000, integer=True)
    group_size = checks.number(where, "group_size", group_size, lo=1, hi=1_000, integer=True)
    seed = checks.number(where, "seed", seed, lo=0, hi=2**63 - 1, integer=True)
    lr = checks.number(where, "lr", lr, lo=0, hi=1e6)
    rng, proposer = np.random.default_rng(seed), Proposer(n_kinds=len(per_kind), lr=lr)
    out = [proposer.probs()]
    for _ in range(steps):
        kinds = proposer.draw(batch, rng)                                                # [batch]
        p = np.array([per_kind[k][rng.integers(len(per_kind[k]))] for k in kinds])        # [batch] problems' rates
        passed = rng.binomial(group_size, p) / group_size                                # [batch] groups' pass rates
        proposer.update(kinds, [learnability(float(r), kind) for r in passed])
        out.append(proposer.probs())
    return np.array(out)


@dataclass
class Proposer:
    """A softmax policy over n_kinds kinds: logits start at 0 (uniform). update(kinds, rewards) takes one REINFORCE
    step on the mean over the step's problems of (reward - the step's mean reward) * grad log pi(kind), at rate lr."""
    n_kinds: int = len(KINDS)
    lr: float = 1.0
    logits: np.ndarray = field(default=None)

    def __post_init__(self):
        self.n_kinds = checks.number("Proposer", "n_kinds", self.n_kinds, lo=1, hi=10_000, integer=True)
        self.lr = checks.number("Proposer", "lr", self.lr, lo=0, hi=1e6)
        self.logits = np.zeros(self.n_kinds) if self.logits is None else \
            checks.array("Proposer", "logits", self.logits, dims=1).astype(float)
        if len(self.logits) != self.n_kinds:
            raise ValueError(f"Proposer: logits must hold n_kinds={self.n_kinds} numbers, got {len(self.logits)}")

    def probs(self):
        z = np.exp(self.logits - self.logits.max())
        return z / z.sum()

    def entropy(self):
        """The policy's entropy in nats (log n_kinds when uniform)."""
        p = self.probs()
        return float(-(p[p > 0] * np.log(p[p > 0])).sum())

    def draw(self, n, rng):
        """n kind indices drawn from the policy with the numpy Generator rng."""
        return rng.choice(self.n_kinds, size=checks.number("Proposer.draw", "n", n, lo=0, integer=True), p=self.probs())

    def update(self, kinds, rewards):
        """One REINFORCE step: kinds [n] indices, rewards [n]; the step's mean reward is the baseline."""
        kinds = np.asarray(kinds, dtype=int)
        rewards = checks.array("Proposer.update", "rewards", rewards, dims=1).astype(float)
        if len(kinds) != len(rewards) or not len(kinds):
            raise ValueError(f"Proposer.update: kinds and rewards must be as long as each other and not empty, got "
                             f"{len(kinds)} and {len(rewards)}")
        if ((kinds < 0) | (kinds >= self.n_kinds)).any():
            raise ValueError(f"Proposer.update: kinds must be indices below n_kinds={self.n_kinds}")
        adv = rewards - rewards.mean()                                   # [n]
        onehot = np.eye(self.n_kinds)[kinds]                             # [n, K]
        grad = (adv[:, None] * (onehot - self.probs()[None, :])).mean(0)  # [K]: E[A grad log pi(kind)]
        self.logits = self.logits + self.lr * grad
        return grad


@dataclass
class ProposerRollout(GroupRollout):
    """GroupRollout whose prompts a Proposer chooses. kinds: each prompt's kind index (one per prompt, into the
    proposer's kinds); the proposer draws a kind for each of a step's prompts and a prompt of that kind uniformly.
    anchor: the share of each step's prompts drawn instead uniformly from anchor_idx (a human seed set; those are
    not paid to the proposer). After each step the proposer is paid learnability(group pass rate, reward) for
    each prompt it chose, the pass rate being the share of the group's rewards >= 1, and takes one update.
    band (lo, hi), optional: a gate on what the solver trains on (R-Zero's filter, arXiv 2508.05004): a group whose
    pass rate lies outside [lo, hi] gets every reward set to 0, so no spread and no gradient (the proposer is paid
    as before; the step's record then reads the gated rewards).
    history: per step {probs, learnability (the mean paid), zero_spread (the proposer's groups with no spread),
    gated (the share of groups the band took out)}.
    Learning rate 0 keeps the proposer where it starts: with uniform logits, uniform kinds (the control)."""
    proposer: Proposer = None
    kinds: list = None
    reward: str = "azr"
    anchor: float = 0.0
    anchor_idx: list = None
    band: tuple = None
    history: list = field(default_factory=list)

    def start(self, policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn=None):
        where = "ProposerRollout"
        if not isinstance(self.proposer, Proposer):
            raise ValueError(f"{where}: proposer must be a Proposer, got {checks._short(self.proposer)}")
        if self.reward not in REWARDS:
            raise ValueError(f"{where}: reward must be one of {REWARDS}, got {checks._short(self.reward)}")
        if cfg.dynamic_sampling:
            raise ValueError(f"{where}: the proposer chooses every prompt; set dynamic_sampling=False")
        kinds = checks.sequence(where, "kinds", self.kinds, length=len(prompts))
        if not all(isinstance(k, (int, np.integer)) and 0 <= k < self.proposer.n_kinds for k in kinds):
            raise ValueError(f"{where}: kinds must be indices below the proposer's n_kinds={self.proposer.n_kinds}")
        self.anchor = checks.number(where, "anchor", self.anchor, lo=0, hi=1)
        if self.band is not None:
            lo, hi = (checks.number(where, f"band[{i}]", v, lo=0, hi=1) for i, v in enumerate(
                checks.sequence(where, "band", self.band, length=2)))
            if lo > hi:
                raise ValueError(f"{where}: band=({lo}, {hi}) must have lo <= hi (a band of pass rates)")
            self.band = (lo, hi)
        self._by_kind = [np.flatnonzero(np.asarray(kinds) == k) for k in range(self.proposer.n_kinds)]
        self._anchor_idx = np.asarray(self.anchor_idx if self.anchor_idx is not None else [], dtype=int)
        if self.anchor and not len(self._anchor_idx):
            raise ValueError(f"{where}: anchor={self.anchor} needs anchor_idx, the seed set's prompt indices")
        self._drawn = None
        draw = super().start(policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn)
        G = cfg.group_size

        def draw_and_pay(step):
            b = draw(step)
            kinds_drawn, n_anchor = self._drawn
            rates = (b.rewards.reshape(-1, G) >= 1.0).float().mean(1).numpy()      # [n prompts] pass rate
            mine = rates[n_anchor:]
            paid = np.array([learnability(float(p), self.reward) for p in mine])
            if len(paid):
                self.proposer.update(kinds_drawn, paid)
            gated = 0.0
            if self.band is not None:
                out = (rates < self.band[0]) | (rates > self.band[1])                 # [n prompts]
                b.rewards = b.rewards.reshape(-1, G).masked_fill(torch.as_tensor(out)[:, None], 0.0).reshape(-1)
                gated = float(out.mean())
            self.history.append({"probs": self.proposer.probs().tolist(), "kinds": kinds_drawn.tolist(),
                                 "learnability": float(paid.mean()) if len(paid) else None,
                                 "zero_spread": float(np.mean((mine == 0) | (mine == 1))) if len(mine) else None,
                                 "gated": gated})
            b.counts = dict(b.counts, proposer_entropy=self.proposer.entropy(),
                            proposer_learnability=self.history[-1]["learnability"])
            return b
        return draw_and_pay

    def choose(self, step, rng, n, n_all, pools):
        n_anchor = int(round(self.anchor * n))
        kinds = self.proposer.draw(n - n_anchor, rng)
        empty = [k for k in set(kinds.tolist()) if not len(self._by_kind[k])]
        if empty:
            raise ValueError(f"ProposerRollout: the proposer chose kind {empty[0]}, which has no prompt in the pool")
        idx = [self._by_kind[k][rng.integers(0, len(self._by_kind[k]))] for k in kinds]
        anchor = self._anchor_idx[rng.integers(0, len(self._anchor_idx), n_anchor)] if n_anchor else []
        self._drawn = (kinds, n_anchor)
        return np.concatenate([np.asarray(anchor, dtype=int), np.asarray(idx, dtype=int)])


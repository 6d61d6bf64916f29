"""Lab 04's checks (entropy collapse): token entropy, the health check."""
import torch

from utils.eval.health import ENTROPY_RATIO, KL_CEILING, STD_FLOOR
from utils.notebook.exercises.common import (
    ExerciseError,
    _agree,
    _generator,
    _note,
    _run,
    _worked_then_generated,
    learner_check,
)


@learner_check("(logits, mask)", "the mean entropy in nats, a scalar tensor or a number")
def check_token_entropy(fn):
    """Check fn(logits [N, T, V], mask [N, T]) -> mean entropy in nats over the masked positions: each
    position where mask is 1 counts once (rows with more positions weigh more), masked positions not at all,
    and a fully peaked distribution gives exactly 0 (no nan from 0 * log 0)."""
    import math

    from utils.eval.health import token_entropy
    uniform_peaked = torch.tensor([[[0.0, 0, 0, 0], [100.0, 0, 0, 0], [0.0, 0, 0, 0]]])   # [1, 3, 4]
    u4, peak = [0.0, 0.0, 0.0, 0.0], [100.0, 0.0, 0.0, 0.0]
    cases = [
        ("one uniform position over 4 tokens (ln 4 = 1.3863 nats; 2 bits)", (uniform_peaked[:, :1], torch.ones(1, 1)),
         math.log(4)),
        ("uniform, then peaked, then a masked position: (ln 4 + 0) / 2", (uniform_peaked, torch.tensor([[1, 1, 0]])),
         math.log(4) / 2),
        ("p = (.75, .25) from logits (ln 3, 0): -(.75 ln .75 + .25 ln .25)", (torch.tensor([[[math.log(3), 0.0]]]),
                                                                              torch.ones(1, 1)), 0.562335),
        ("two rows, row 2 fully masked", (torch.tensor([[[0.0, 0.0]], [[5.0, -5.0]]]), torch.tensor([[1], [0]])),
         math.log(2)),
        # row 0: two uniform positions (ln 4 each); row 1: one peaked position (0), then a masked one.
        # Per position: (ln 4 + ln 4 + 0) / 3 = 0.9242; the mean of the rows' means would be (ln 4 + 0) / 2 = 0.6931
        ("rows with 2 and 1 unmasked positions (entropies ln 4, ln 4 | 0): each position counts once",
         (torch.tensor([[u4, u4], [peak, u4]]), torch.tensor([[1, 1], [1, 0]])), 2 * math.log(4) / 3),
        # logits (1000, 0, 0, 0): softmax gives exactly (1, 0, 0, 0) in float32, so log(softmax) has log 0 = -inf and
        # 0 * -inf = nan; log_softmax gives (0, -1000, -1000, -1000) and 0 * -1000 = 0: entropy exactly 0
        ("a fully peaked position, logits (1000, 0, 0, 0): entropy 0", (torch.tensor([[[1000.0, 0, 0, 0]]]),
                                                                      torch.ones(1, 1)), 0.0),
    ]
    hint = ("log_softmax over the last axis (not log(softmax): it gives log 0 = -inf on a peaked distribution), "
            "H = -(p * log p).sum(-1) per position in nats (natural log), then average over all positions where mask "
            "is 1 (divide by mask.sum(), not by T and not row by row).")
    generated = _entropy_cases(_generator("check_token_entropy"))

    def worked():
        """The worked cases through _run, with the hint."""
        try:
            _run("my_token_entropy", fn, token_entropy, cases)
        except ExerciseError as e:
            raise ExerciseError(f"{e}\nHint: {hint}") from None
    try:
        fn(*cases[0][1])
    except NotImplementedError:
        return _note("my_token_entropy", token_entropy)
    _worked_then_generated(worked, lambda: _agree("my_token_entropy", fn, token_entropy, generated, _describe_entropy,
                                                  hint))
    print(f"OK: my_token_entropy also matches on {len(generated)} generated cases.")
    return fn


def _entropy_cases(rng, n=40):
    """Generated (logits [N, T, V], mask [N, T]) cases, smallest first: 1-3 rows of 1-4 positions over 2-6 tokens,
    logits flat, spread or peaked (up to 1000 apart), masks with masked positions and fully masked rows (never all)."""
    out = []
    for _ in range(n):
        N, T, V = rng.randint(1, 3), rng.randint(1, 4), rng.randint(2, 6)
        scale = rng.choice([0.0, 0.5, 3.0, 1000.0])
        logits = torch.tensor([[[rng.gauss(0, 1) * scale for _ in range(V)] for _ in range(T)] for _ in range(N)])
        mask = torch.tensor([[int(rng.random() < 0.7) for _ in range(T)] for _ in range(N)])
        mask[rng.randrange(N), rng.randrange(T)] = 1
        out.append((logits, mask))
    return sorted(out, key=lambda c: c[0].numel())


def _describe_entropy(logits, mask):
    """A generated entropy case in words."""
    rounded = [[[round(v, 3) for v in p] for p in r] for r in logits.tolist()]
    return f"my_token_entropy(logits={rounded}, mask={mask.tolist()})"


@learner_check('(history, window)', 'the set of failed checks ("spread", "entropy", "kl")')
def check_health_check(fn):
    """Check fn(history, window=5) -> set of failed check names ("spread", "entropy", "kl") against
    utils.eval.health.health_check on worked histories (the default window and window=2, a history shorter
    than the window, values exactly at the limits), and a ValueError for an empty history or a missing
    metric. Returns the function to use."""
    from utils.eval.health import health_check

    def reference(history, window=5):
        return set(health_check(history, window=window)["failed"])

    def rec(std=0.3, ent=0.5, kl=0.1):
        return {"group_reward_std": std, "entropy": ent, "kl": kl}
    low = ENTROPY_RATIO * 0.5 * 0.9                                      # under the floor of a run started at 0.5
    cases = [("a healthy run", [rec()] * 8),
             (f"entropy 0.5 -> {low:.3f} at the end", [rec()] * 8 + [rec(ent=low)] * 5),
             (f"group std {STD_FLOOR / 2} and KL {KL_CEILING * 2}",
              [rec()] * 5 + [rec(std=STD_FLOOR / 2, kl=KL_CEILING * 2)] * 5),
             ("entropy low in the middle, fine in the last 5 steps", [rec()] * 5 + [rec(ent=0.0)] * 10 + [rec()] * 5),
             ("one bad step among the last 5 (mean entropy 0.4)", [rec()] * 9 + [rec(ent=0.0)]),
             ("a run that started at 0.3 nats and ends at 0.2 (floor 0.15)", [rec(ent=0.3)] * 5 + [rec(ent=0.2)] * 5),
             ("a run that started at 1.0 nats and ends at 0.4 (floor 0.5)", [rec(ent=1.0)] * 5 + [rec(ent=0.4)] * 5),
             ("a first step of 1.1 nats, then 0.35 (start: the first 5 steps' mean 0.5, floor 0.25)",
              [rec(ent=1.1)] + [rec(ent=0.35)] * 9),
             # exact in binary: std 0.1 = STD_FLOOR, entropy 0.25 = 0.5 x the start 0.5, KL 10.0 = KL_CEILING
             ("std, entropy and KL exactly at their limits (0.1, 0.25 = 0.5 x 0.5, 10.0): strictly beyond is a flag",
              [rec()] * 5 + [rec(std=STD_FLOOR, ent=ENTROPY_RATIO * 0.5, kl=KL_CEILING)] * 5),
             ("a 3-step history, shorter than the window (std 0.3, 0.05, 0.05: mean 0.133, not below 0.1)",
              [rec(std=0.3), rec(std=0.05), rec(std=0.05)])]
    windowed = [  # window 2: the last 2 steps and the first 2 steps, not 5
        # KL: mean of the last 2 = 20 > 10 (over the last 5: (3 x 0.1 + 2 x 20) / 5 = 8.06, not above)
        (f"window 2, KL {2 * KL_CEILING} in the last 2 of 10 steps", [rec()] * 8 + [rec(kl=2 * KL_CEILING)] * 2, 2),
        # entropy: start = mean of the first 2 = 1.0, floor 0.5, end = mean of the last 2 = 0.45 < 0.5: flagged
        # (with 5 for either: start (2 x 1.0 + 3 x 0.6) / 5 = 0.76, floor 0.38; end (3 x 0.6 + 2 x 0.45) / 5 = 0.54)
        ("window 2, entropy 1.0, 1.0, then 0.6 x 6, then 0.45, 0.45",
         [rec(ent=1.0)] * 2 + [rec(ent=0.6)] * 6 + [rec(ent=0.45)] * 2, 2)]
    try:
        fn(cases[0][1])
    except NotImplementedError:
        return _note("my_health_check", reference)
    generated = _health_cases(_generator("check_health_check"), rec)
    hint = ("average each metric over the last `window` steps (all of them: not the last one, their max or their "
            "median), flag std < STD_FLOOR, entropy < ENTROPY_RATIO x the mean of the first `window` steps and "
            "kl > KL_CEILING (strictly), and raise ValueError for an empty history or a missing metric.")
    _worked_then_generated(lambda: _worked_health(fn, reference, cases, windowed), lambda: _agree(
        "my_health_check", fn, reference, generated, _describe_health, hint))
    print(f"OK: my_health_check agrees with the reference on {len(cases) + len(windowed)} worked histories and "
          f"{len(generated)} generated ones, and rejects bad input.")
    return fn


def _health_cases(rng, rec, n=40):
    """Generated (history, window) cases, shortest first: 1-12 steps, windows 1-6 (longer than the history too), values
    near and exactly at the limits, a KL spike inside an otherwise calm window (its mean under or over the ceiling), an
    entropy that falls, and now and then an empty history or a step without 'kl' (a ValueError)."""
    out = []
    for _ in range(n):
        L, w = rng.randint(1, 12), rng.randint(1, 6)
        start = rng.choice([0.5, 1.0])
        end = rng.choice([0.3, 0.45, ENTROPY_RATIO, 0.55, 0.8, 1.0])    # where the entropy falls to, x start
        hist = [rec(std=rng.choice([0.375, 0.25, STD_FLOOR, 0.0625, 0.125]),
                    ent=start * (rng.choice([0.75, 1.0, 1.5]) if i < L // 2 else rng.choice([end, end, end * 1.25])),
                    kl=rng.choice([0.1, 0.1, 1.0, KL_CEILING])) for i in range(L)]
        if rng.random() < 0.4:                                   # a spike in a calm window
            for r in hist[-w:]:
                r["kl"] = 0.1
            hist[-rng.randint(1, min(w, L))]["kl"] = rng.choice([3.0 * KL_CEILING, 1.5 * KL_CEILING * w])
        if rng.random() < 0.05:
            hist = []
        elif rng.random() < 0.05:
            del hist[-1]["kl"]
        out.append((hist, w))
    return sorted(out, key=lambda c: len(c[0]))


def _describe_health(history, window):
    """A generated history in words."""
    short = [(r.get("group_reward_std"), r.get("entropy"), r.get("kl")) for r in history]
    return (f"my_health_check(history, window={window}) with {len(history)} steps of (group_reward_std, entropy, kl): "
            f"{[tuple(round(v, 4) if v is not None else None for v in t) for t in short]}")


def _worked_health(fn, reference, cases, windowed):
    """The worked histories, each with its message, and the two bad inputs."""
    for desc, hist, window in [(d, h, None) for d, h in cases] + windowed:
        want = reference(hist) if window is None else reference(hist, window=window)
        try:
            got = fn(hist) if window is None else fn(hist, window=window)
        except Exception as e:
            raise ExerciseError(f"my_health_check on {desc} raised {type(e).__name__}: {e}; expected "
                                f"{sorted(want) or 'no flags'}") from None
        if set(got or ()) != want:
            raise ExerciseError(f"my_health_check on {desc}: expected {sorted(want) or 'no flags'}, got {got}\n"
                                f"Hint: average each metric over the last `window` steps (history[-window:], all of "
                                f"them if the history is shorter), then compare with STD_FLOOR={STD_FLOOR} (std < "
                                f"floor), ENTROPY_RATIO={ENTROPY_RATIO} x the mean entropy of the first `window` steps "
                                f"(entropy < that) and KL_CEILING={KL_CEILING} (kl > ceiling); use the `window` "
                                f"argument, not a fixed 5.")
    for desc, bad in (("an empty history", []),
                      ("a history without 'kl'", [{"group_reward_std": 0.3, "entropy": 0.5}])):
        try:
            fn(bad)
        except ValueError:
            continue
        except Exception as e:
            raise ExerciseError(f"my_health_check on {desc} raised {type(e).__name__}: {e}; raise a ValueError "
                                f"that names what is missing instead") from None
        raise ExerciseError(f"my_health_check on {desc} should raise ValueError naming what is missing")

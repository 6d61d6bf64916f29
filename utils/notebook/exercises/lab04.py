"""Lab 04's checks (entropy collapse): token entropy, the health check."""
import torch

from utils.notebook.exercises.common import ExerciseError, _note, _run, learner_check


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
    try:
        return _run("my_token_entropy", fn, token_entropy, cases)
    except ExerciseError as e:
        raise ExerciseError(f"{e}\nHint: log_softmax over the last axis (not log(softmax): it gives log 0 = -inf on "
                            f"a peaked distribution), H = -(p * log p).sum(-1) per position in nats (natural log), "
                            f"then average over all positions where mask is 1 (divide by mask.sum(), not by T and "
                            f"not row by row).") from None


@learner_check('(history, window)', 'the set of failed checks ("spread", "entropy", "kl")')
def check_health_check(fn):
    """Check fn(history, window=5) -> set of failed check names ("spread", "entropy", "kl") against
    utils.eval.health.health_check on worked histories (the default window and window=2, a history shorter
    than the window, values exactly at the limits), and a ValueError for an empty history or a missing
    metric. Returns the function to use."""
    from utils.eval.health import ENTROPY_RATIO, KL_CEILING, STD_FLOOR, health_check

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
    print(f"OK: my_health_check agrees with the reference on {len(cases) + len(windowed)} histories and rejects bad "
          f"input.")
    return fn

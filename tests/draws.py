"""How many examples each property of the property suites draws (tests/test_properties*.py).

All of them in the suite itself. The lower-bounds and drift checks (.ci/lowest, .ci/drift) rerun the unit tests in
environments of other library versions: there every property still runs, on a share of its draws
(RLVR_LABS_PROPERTY_DRAWS, 0.25 in those two checks). The draws search the course's own argument checks, which run
before any library is called, so more of them in a third environment buy little that the first has not; the property
suites were about 40% of the unit tests' time (tests/test_properties_models.py 141 s and tests/test_properties.py
39 s of 440 s, 2026-11-28), which each check paid again."""
import os

SHARE_ENV = "RLVR_LABS_PROPERTY_DRAWS"


def draws(n):
    """n examples, times the share in RLVR_LABS_PROPERTY_DRAWS (default 1), at least 1."""
    share = float(os.environ.get(SHARE_ENV) or 1)
    if not 0 < share <= 1:
        raise ValueError(f"{SHARE_ENV} must be a share in (0, 1], got {share}")
    return max(1, round(n * share))

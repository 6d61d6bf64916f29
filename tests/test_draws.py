"""tests/draws.py: a property's examples, all of them or a share, by hand."""
import pytest
from draws import SHARE_ENV, draws


def test_all_by_default_and_a_share_when_set(monkeypatch):
    monkeypatch.delenv(SHARE_ENV, raising=False)
    assert draws(40) == 40 and draws(3) == 3
    monkeypatch.setenv(SHARE_ENV, "0.25")
    assert draws(40) == 10 and draws(30) == 8 and draws(3) == 1 and draws(1) == 1


@pytest.mark.parametrize("bad", ["0", "1.5", "-0.2"])
def test_a_share_outside_0_1_is_refused(monkeypatch, bad):
    monkeypatch.setenv(SHARE_ENV, bad)
    with pytest.raises(ValueError, match=SHARE_ENV):
        draws(10)

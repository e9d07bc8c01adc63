import pytest

from .history import T0


@pytest.fixture(autouse=True)
def _commands_clock_after_the_history(monkeypatch):
    """The tests' histories are in spring 2026: the commands' clock (which judges how far
    back --until may reach, by the history kept) reads a day a month after them."""
    from datetime import timedelta

    from backtest.management.commands import backtest

    monkeypatch.setattr(backtest, "clock", lambda: T0 + timedelta(days=30))

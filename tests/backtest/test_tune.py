"""manage.py tune: the best three at no more storage; nothing applied."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from backtest import tune
from records.models import Policy

from .history import APP, make_history

pytestmark = pytest.mark.django_db


def test_the_simplex_grid_sums_to_one_and_covers_the_corners():
    points = tune.simplex(0.25)
    assert len(points) == 15
    assert all(abs(sum(p) - 1) < 1e-9 for p in points)
    assert {(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)} <= set(points)


def test_tuning_finds_no_more_regret_at_no_more_storage_and_applies_nothing():
    end = make_history()
    before = list(Policy.objects.values())
    with CaptureQueriesContext(connection) as queries:
        result = tune.tune(APP, 5, end)
    assert not [
        q
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert list(Policy.objects.values()) == before
    assert result.exact and result.tried == len(tune.space(APP))
    assert 1 <= len(result.best) <= tune.BEST
    assert result.best[0].totals.regret <= result.current.regret
    for c in result.best:
        assert c.mean_tokens <= result.current_mean_tokens
        assert c.mean_records <= result.current_mean_records
    regrets = [(c.totals.regret, c.totals.evictions) for c in result.best]
    assert regrets == sorted(regrets)
    for c in result.best:
        better = (c.totals.regret, c.totals.evictions) < (
            result.current.regret,
            result.current.evictions,
        )
        assert result.beats_current(c) == better
    assert not result.beats_current(
        tune.Candidate("the same", Policy(), {}, result.current, 0.0, 0.0)
    )


def test_the_command_prints_the_best_three_with_their_change():
    end = make_history(users=("u1",))
    out = StringIO()
    call_command("tune", "--app", APP, "--days", "5", "--until", end.isoformat(), stdout=out)
    text = out.getvalue()
    assert "1. " in text and "regret" in text and "change:" in text
    assert "Nothing was applied" in text


def test_the_command_refuses_an_unknown_app():
    make_history(users=("u1",))
    with pytest.raises(CommandError, match="shop"):
        call_command("tune", "--app", "nope", "--days", "5")

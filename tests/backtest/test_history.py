"""The history read: the same rows as the ORM gives, whichever way they are read."""

from datetime import UTC

import pytest

from backtest import history
from records import access_log
from records.models import MemoryRecord

from .history import APP, make_history

pytestmark = pytest.mark.django_db


def test_the_read_gives_the_orms_rows_with_utc_timestamps():
    make_history(users=("u1",))
    queries = [
        (
            MemoryRecord.objects.filter(app_name=APP).values_list(
                "user_id", *history._RECORD_COLUMNS
            ),
            (),
        ),
        (
            access_log.EvictedRecord.objects.filter(app_name=APP).values_list(
                *history._EVICTED_COLUMNS
            ),
            (history._EVICTED_COLUMNS.index("term_hashes"),),
        ),
        (
            access_log.SearchLog.objects.filter(app_name=APP)
            .order_by("searched_at", "id")
            .values_list("user_id", "searched_at", "record_ids", "term_hashes"),
            (2, 3),
        ),
    ]
    for queryset, json_columns in queries:
        expected = list(queryset)
        got = [
            tuple(history._json(v) if i in json_columns else v for i, v in enumerate(row))
            for row in history._rows(queryset)
        ]
        assert got == expected and got
        moments = [v for row in got for v in row if hasattr(v, "tzinfo")]
        assert moments and all(m.tzinfo is UTC for m in moments)

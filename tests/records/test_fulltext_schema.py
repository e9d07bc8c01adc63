"""PostgreSQL's search index (``records.fulltext_schema``): its pending list stays small."""

import random
from datetime import UTC, datetime

import pytest
from django.db import DatabaseError, connection, transaction

from records import search_text
from records.models import MemoryRecord

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def test_the_search_index_is_made_with_a_small_pending_list():
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'record_search'")
        assert cursor.fetchone()[0] == ["gin_pending_list_limit=256"]


def _pending_pages() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT n_pending_pages FROM gin_metapage_info(get_raw_page('record_search', 0))"
        )
        return cursor.fetchone()[0]


def test_ingests_between_vacuums_leave_searches_little_to_scan():
    """Every search scans the whole pending list: at PostgreSQL's default (4 MB) 3,000
    records written in ingest-sized batches left 139 pages of it."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
    except DatabaseError:
        pytest.skip("pageinspect (PostgreSQL's contrib) is not available")
    rng = random.Random(3)
    words = [f"{a}{b}" for a in ("kiwi", "order", "parcel", "zurich", "refund") for b in range(100)]
    pages = []
    for batch in range(150):
        texts = [" ".join(rng.choices(words, k=12)) for _ in range(20)]
        MemoryRecord.objects.bulk_create(
            MemoryRecord(
                app_name="app",
                user_id=f"u{batch % 7}",
                content=text,
                search_tokens=search_text.index_tokens(text),
                created_at=NOW,
                last_accessed_at=NOW,
                tokens=12,
            )
            for text in texts
        )
        pages.append(_pending_pages())
    assert max(pages) <= 33  # 256 kB is 32 pages: the insert that fills it empties it

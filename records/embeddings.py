"""Optional embeddings: ``MEMADMIN_EMBEDDER=pkg.mod.fn`` turns on hybrid search.

The embedder is a ``callable(list[str]) -> list[list[float]]``, one vector per text, in
order. With it set:

- ingest embeds the records it stored, in one call per ingest, after the user's lock
  is released (``embed_new``). If the embedder fails or returns something unusable,
  the ingest still succeeds and the records are left for the back-fill;
- the back-fill (``backfill``: the Celery task ``records.tasks.backfill_embeddings``,
  ``manage.py backfill_embeddings``, the dashboard's Embeddings page) embeds the records
  that have no vector yet, in batches, in id order;
- search fuses the lexical ranking with the user's nearest vectors
  (``records.search``, ``hybrid``); the vectors are compared in Python, bounded by the
  user's records (the caps bound those), or first ranked by PostgreSQL where pgvector
  exists (``records.pgvector``: the same ids).

Unset, nothing here runs: no vector is written or read and search is lexical only.
Vectors and their validation: ``records.vectors``. Logs never hold content.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils.module_loading import import_string

from memadmin.log_filters import withheld

from . import pgvector, plugins, policy_sql, vectors
from .models import MemoryRecord, RecordEmbedding
from .policies import policy_for

log = logging.getLogger(__name__)

# How deep each ranking goes before fusion: the lexical and vector top 50.
FUSION_DEPTH = 50
# Records per embedder call in the back-fill.
BACKFILL_BATCH = 64
# Characters of each turn before a record that the embedder reads with it: the record's
# own words must still fit in what a model reads (a few hundred tokens).
CONTEXT_CHARS = 500

Embedder = Callable[[list[str]], Sequence[Sequence[float]]]


class EmbedderError(Exception):
    """The embedder setting names nothing usable, or the embedder failed."""


def embedder_path() -> str:
    return (settings.MEMADMIN.get("EMBEDDER") or "").strip()


def enabled() -> bool:
    return bool(embedder_path())


@cache
def _load(path: str) -> Embedder | str:
    """The embedder ``path`` names, or what is wrong with it. Both are kept: a module
    that fails as it loads (after loading a model, say) is not imported again on every
    ingest and search; a changed setting needs a restart anyway."""
    try:
        fn = import_string(path)
    except ImportError as exc:
        return (
            f"MEMADMIN_EMBEDDER={path!r} cannot be imported ({exc}); it must be the dotted "
            "path of a callable(list[str]) -> list[list[float]], e.g. mypkg.embed.embed"
        )
    except Exception as exc:  # its module failed as it loaded (a missing API key, say)
        return f"MEMADMIN_EMBEDDER={path!r}: importing its module raised {plugins.failure(exc)}"
    if not callable(fn):
        return f"MEMADMIN_EMBEDDER={path!r} names a {type(fn).__name__}, not a callable"
    return fn


def embedder() -> Embedder | None:
    """The configured embedder, None when unset; EmbedderError when it is unusable."""
    path = embedder_path()
    if not path:
        return None
    loaded = _load(path)
    if isinstance(loaded, str):
        raise EmbedderError(loaded)
    return loaded


def check_setting() -> str | None:
    """What is wrong with the setting (for the system check), or None."""
    try:
        embedder()
    except EmbedderError as exc:
        return str(exc)
    return None


def context_lines(context: Sequence[tuple[str, str]]) -> str | None:
    """The (author, text) turns before a record as the embedder reads them: one "author:
    text" line each, ``CONTEXT_CHARS`` of each text; None for none."""
    if not context:
        return None
    return "\n".join(_line(author, text[:CONTEXT_CHARS]) for author, text in context)


def embedding_text(content: str, author: str, context: str | None) -> str:
    """What the embedder reads for a record: ``context`` (``context_lines`` of the turns
    before it), then its own line, named by their authors as search's index names them.
    A question names a person ("What did Caroline research?") and is answered by a reply
    ("I researched…") to a turn that named its subject; the bare content matched by
    meaning worse than lexical search (measured: docs/embeddings.md)."""
    own = _line(author, content)
    return f"{context}\n{own}" if context else own


def _line(author: str, text: str) -> str:
    return f"{author}: {text}" if author else text


def embed(texts: list[str]) -> list[vectors.array | None]:
    """One embedder call for ``texts``: a unit vector per text, None where the embedder
    returned an unusable vector (logged). EmbedderError when the call fails or its
    return has the wrong shape (then nothing of the batch is usable)."""
    fn = embedder()
    if fn is None or not texts:
        return [None] * len(texts)
    try:
        returned = fn(list(texts))
    except SoftTimeLimitExceeded:
        raise  # the task's own: it queues itself again (records.tasks)
    except Exception as exc:
        raise EmbedderError(f"the embedder raised {plugins.failure(exc)}") from exc
    try:
        batch = vectors.check_batch(returned, len(texts))
    except vectors.VectorError as exc:
        raise EmbedderError(str(exc)) from exc
    out: list[vectors.array | None] = []
    # Every vector must have the first one's dimension, even when that one is refused
    # for its values (its length still says what the model gives).
    dims = vectors.dimension(batch[0]) if batch else None
    for i, raw in enumerate(batch):
        try:
            vector = vectors.unit(raw, dims)
        except vectors.VectorError as exc:
            log.warning(
                "embedder returned an unusable vector (item %d of %d): %s", i, len(batch), exc
            )
            out.append(None)
            continue
        dims = len(vector)
        out.append(vector)
    return out


def _store(pairs: Sequence[tuple[int, vectors.array]]) -> int:
    """Write vectors of records that still exist (an evicted one is skipped); a vector
    already there is kept. Returns how many were written."""
    if not pairs:
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The records are locked against deletion first: a record whose eviction
            # has not committed yet would pass the insert's own check and then fail
            # the foreign key when the eviction commits; locked, it is skipped here.
            cursor.execute(
                f"SELECT id FROM {MemoryRecord._meta.db_table} WHERE id = ANY(%s) "  # noqa: S608 - ours
                "ORDER BY id FOR KEY SHARE",
                [[i for i, _ in pairs]],
            )
            held = {i for (i,) in cursor.fetchall()}
            pairs = [(i, v) for i, v in pairs if i in held]
            if not pairs:
                return 0
        sql, rows = pgvector.insert(MemoryRecord._meta.db_table, pairs)
        before = RecordEmbedding.objects.filter(record_id__in=[i for i, _ in pairs]).count()
        cursor.executemany(sql, rows)
        after = RecordEmbedding.objects.filter(record_id__in=[i for i, _ in pairs]).count()
    return after - before


def embed_new(records: Sequence, candidates: Sequence, evicted: Sequence = ()) -> int:
    """The ingest hook: embed the records an ingest stored (one embedder call), each with
    the turns before it in that ingest (its ``candidates``, in the records' order: the
    turns are not stored, see docs/embeddings.md), and keep their vectors; ``evicted``
    (victims of the same ingest) are skipped. Never raises (but a Celery task's
    SoftTimeLimitExceeded, left to the task): a failure leaves the records for the
    back-fill, which embeds author and content only. Called after the user's lock is
    released, so a slow embedder holds no lock."""
    if not records or not enabled():
        return 0
    gone = {v.id for v in evicted}
    pairs = [
        (r.id, embedding_text(c.content, c.author, context_lines(c.context)))
        for r, c in zip(records, candidates, strict=True)
        if r.id not in gone
    ]
    if not pairs:
        return 0
    try:
        found = embed([text for _, text in pairs])
        return _store([(rid, v) for (rid, _), v in zip(pairs, found, strict=True) if v is not None])
    except (EmbedderError, DatabaseError) as exc:
        log.warning(
            "embedding %d new record(s) failed (%s); left for the back-fill", len(pairs), exc
        )
        return 0


# --- search -------------------------------------------------------------------------------


def nearest(app_name: str, user_id: str, query: vectors.array, now: datetime, limit: int):
    """Ids of the user's live records nearest to ``query``, best first (brute force over
    the user's vectors, which the caps bound; with pgvector, PostgreSQL picks the
    candidates: ``records.pgvector``)."""
    live = MemoryRecord.objects.filter(app_name=app_name, user_id=user_id).filter(
        policy_sql.live_q(now, policy_for(app_name).params())
    )
    if pgvector.enabled():
        return pgvector.nearest(*live.values("id").query.sql_with_params(), query, limit)
    rows = RecordEmbedding.objects.filter(record__in=live.values("id"), dims=len(query))
    # The ORM writes the statement; a plain cursor reads it, without a model row or
    # converter per vector, and the blobs are packed into one buffer for the scan.
    sql, params = rows.values_list("record_id", "vector").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return vectors.nearest(query, cursor.fetchall(), limit)


def hybrid(
    app_name: str, user_id: str, query: str, now: datetime, lexical: list[int], limit: int
) -> list[int]:
    """Fuse the lexical ranking with the vector ranking of ``query`` (reciprocal-rank
    fusion, ``vectors.fuse``). Never raises (but a Celery task's SoftTimeLimitExceeded):
    if the query cannot be embedded the lexical ranking stands alone."""
    try:
        (vector,) = embed([query])
    except EmbedderError as exc:
        log.warning("embedding a query failed (%s); lexical ranking only", exc)
        vector = None
    if vector is None:
        return lexical[:limit]
    near = nearest(app_name, user_id, vector, now, max(limit, FUSION_DEPTH))
    return vectors.fuse(lexical, near, limit)


# --- back-fill ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Progress:
    records: int
    embedded: int

    @property
    def missing(self) -> int:
        return max(self.records - self.embedded, 0)

    @property
    def percent(self) -> int:
        return 100 if not self.records else (100 * self.embedded) // self.records


def progress(app_name: str | None = None) -> Progress:
    records = MemoryRecord.objects.all()
    vectors_ = RecordEmbedding.objects.all()
    if app_name:
        records = records.filter(app_name=app_name)
        vectors_ = vectors_.filter(record__in=records.values("id"))
    return Progress(records=records.count(), embedded=vectors_.count())


@dataclass
class BackfillResult:
    embedded: int = 0
    failed: int = 0  # records the embedder returned no usable vector for (left missing)
    batches: int = 0
    last_id: int = 0  # resume after this id
    done: bool = False
    error: str = ""  # the embedder failed: the pass stopped here


def backfill(
    *,
    app_name: str | None = None,
    after_id: int = 0,
    batch_size: int = BACKFILL_BATCH,
    max_batches: int | None = None,
) -> BackfillResult:
    """Embed records without a vector, ``batch_size`` per embedder call, in id order,
    from ``after_id``. Idempotent and resumable: it only ever fills what is missing, so
    a re-run (after a crash, or from 0) does no harm; ``last_id`` says where to go on.

    A record whose vector is unusable is skipped for this pass (counted in ``failed``);
    an embedder that fails outright stops the pass (``error``)."""
    if embedder() is None:
        raise EmbedderError("MEMADMIN_EMBEDDER is not set: there is nothing to back-fill with")
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    result = BackfillResult(last_id=after_id)
    while max_batches is None or result.batches < max_batches:
        rows = MemoryRecord.objects.filter(id__gt=result.last_id, embedding__isnull=True)
        if app_name:
            rows = rows.filter(app_name=app_name)
        batch = list(rows.order_by("id").values_list("id", "content", "author")[:batch_size])
        if not batch:
            result.done = True
            pgvector.fill_missing()  # vectors written by a process that predates the column
            break
        try:
            # The turns before a record are not stored: author and content only.
            found = embed([embedding_text(content, author, None) for _, content, author in batch])
        except EmbedderError as exc:
            result.error = str(exc)
            log.warning("back-fill stopped after record %d: %s", result.last_id, exc)
            break
        pairs = [(row[0], v) for row, v in zip(batch, found, strict=True) if v is not None]
        try:
            result.embedded += _store(pairs)
        except DatabaseError as exc:  # a deadlock with an eviction, say: the next pass
            result.error = f"writing the vectors failed: {withheld(exc)}"
            log.warning("back-fill stopped after record %d: %s", result.last_id, result.error)
            break
        result.failed += len(batch) - len(pairs)
        result.batches += 1
        result.last_id = batch[-1][0]
    return result


def backfill_steps(
    *, app_name: str | None = None, after_id: int = 0, batch_size: int = BACKFILL_BATCH
) -> Iterator[BackfillResult]:
    """``backfill`` one batch at a time: the running totals after each committed batch,
    until done or the embedder fails (so a caller stopped midway knows ``last_id``)."""
    total = BackfillResult(last_id=after_id)
    while not total.done and not total.error:
        step = backfill(
            app_name=app_name, after_id=total.last_id, batch_size=batch_size, max_batches=1
        )
        total.embedded += step.embedded
        total.failed += step.failed
        total.batches += step.batches
        total.last_id, total.done, total.error = step.last_id, step.done, step.error
        yield total


def clear(app_name: str | None = None) -> int:
    """Delete stored vectors (another model: run before a full back-fill)."""
    rows = RecordEmbedding.objects.all()
    if app_name:
        rows = rows.filter(record__app_name=app_name)
    return rows.delete()[0]

"""Vectors of the optional embedder (``records.embeddings``), one per record."""

from __future__ import annotations

from django.db import models

from .memory import MemoryRecord


class RecordEmbedding(models.Model):
    """A record's vector: unit length, little-endian float32 (``records.vectors``).

    It goes with its record in the database itself (``records.embedding_schema``: a
    foreign key ON DELETE CASCADE on PostgreSQL, a trigger on SQLite), not through
    Django's collector, so evicting records stays one DELETE statement. Erasure counts
    and deletes these rows first (``erasure.inventory``).
    """

    record = models.OneToOneField(
        MemoryRecord,
        primary_key=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="embedding",
    )
    dims = models.PositiveSmallIntegerField()
    vector = models.BinaryField()

    class Meta:
        app_label = "records"

    def __str__(self) -> str:
        return f"vector of record {self.record_id} ({self.dims} dims)"

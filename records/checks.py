"""System checks of the memory domain's settings (``manage.py check`` and every start)."""

from __future__ import annotations

from django.core import checks

from . import embeddings


@checks.register()
def embedder_setting(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """MEMADMIN_EMBEDDER must name an importable callable (it is not called here: it may
    be a hosted API)."""
    problem = embeddings.check_setting()
    if problem is None:
        return []
    return [
        checks.Error(
            problem,
            hint="Unset MEMADMIN_EMBEDDER for lexical search only, or see docs/embeddings.md.",
            id="records.E001",
        )
    ]

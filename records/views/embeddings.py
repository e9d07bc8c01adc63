"""The Embeddings page: how many records have a vector, and a back-fill (ops)."""

from __future__ import annotations

from django.views.decorators.http import require_GET, require_POST

from memadmin.htmx import render_page
from memadmin.roles import OPS, has_role, role_required, viewer_required

from .. import embeddings
from ..tasks import backfill_embeddings

TEMPLATE = "records/embeddings.html"


def _page(request, *, watching: bool, status: int = 200):
    progress = embeddings.progress()
    context = {
        "here": "embeddings",
        "enabled": embeddings.enabled(),
        "problem": embeddings.check_setting(),
        "progress": progress,
        # Polled while a back-fill started here still has records to embed.
        "watching": watching and progress.missing > 0,
        "can_start": has_role(request.user, OPS),
    }
    return render_page(request, TEMPLATE, "progress", context, status=status)


@require_GET
@viewer_required
def embeddings_page(request):
    return _page(request, watching=request.GET.get("watch") == "1")


@require_POST
@role_required(OPS)
def embeddings_backfill(request):
    if not embeddings.enabled() or embeddings.check_setting():
        return _page(request, watching=False, status=422)
    backfill_embeddings.delay("", 0)
    return _page(request, watching=True)

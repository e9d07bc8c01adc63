"""Sessions: idle and active per app, one session's events and artifacts, tombstones."""

from __future__ import annotations

from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from memadmin.htmx import render_page
from memadmin.roles import viewer_required

from ..forms import SessionFilterForm
from ..models import AgentSession, MemoryRecord, RetiredSession
from ..selectors import (
    app_session_counts,
    artifacts_for_session,
    session_event_spread,
    session_events_page,
    session_page,
)
from ..selectors.sessions import is_idle


@viewer_required
def sessions(request):
    now = timezone.now()
    form = SessionFilterForm(request.GET)
    form.is_valid()  # each field that validated filters; one that did not shows why
    filters = form.cleaned_data
    page = session_page(
        now,
        app_name=filters.get("app", ""),
        state=filters.get("state", ""),
        search=(filters.get("q") or "").strip(),
        page=request.GET.get("page", 1),
    )
    counts = app_session_counts(now)
    events = session_event_spread()
    context = {
        "form": form,
        "page": page,
        "counts": [(c, events.get(c.app_name)) for c in counts],
        "apps": [c.app_name for c in counts],
        "query": _without_page(request.GET),  # for pager links
    }
    return render_page(request, "records/sessions.html", "session-table", context)


def _without_page(params) -> str:
    params = params.copy()
    params.pop("page", None)
    return params.urlencode()


@viewer_required
def session(request, pk):
    agent_session = get_object_or_404(AgentSession, pk=pk)
    events = session_events_page(agent_session, page=request.GET.get("page", 1))
    artifacts, artifacts_truncated = artifacts_for_session(agent_session)
    context = {
        "s": agent_session,
        "idle": is_idle(agent_session, timezone.now()),
        "events": events,
        "artifacts": artifacts,
        "artifacts_truncated": artifacts_truncated,
    }
    return render_page(request, "records/session.html", "events", context)


@viewer_required
def retired_session(request, pk):
    tombstone = get_object_or_404(RetiredSession, pk=pk)
    records = MemoryRecord.objects.filter(
        app_name=tombstone.app_name,
        user_id=tombstone.user_id,
        source_session_id=tombstone.session_id,
    ).count()
    return render(request, "records/retired_session.html", {"t": tombstone, "records": records})

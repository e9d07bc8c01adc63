"""Read queries for the Sweeps pages: runs one page at a time, a dry-run's report.

Every function runs a fixed number of queries, whatever the number of runs or entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.core.paginator import Page, Paginator
from django.db.models import Count, Q, Sum

from records.models import MemoryRecord

from .models import (
    ApplyStatus,
    DailyMetric,
    EntryKind,
    ItemStatus,
    PlanEntry,
    Run,
    RunKind,
    RunStatus,
)

ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)


def is_active(run: Run | None) -> bool:
    return run is not None and run.status in ACTIVE


def application_of(run: Run) -> Run | None:
    """The apply run of a dry-run's plan (select_related "application" avoids a query)."""
    try:
        return run.application
    except Run.application.RelatedObjectDoesNotExist:
        return None


def needs_polling(run: Run) -> bool:
    """Something about this run still changes: it runs, or its plan is being applied."""
    return is_active(run) or is_active(application_of(run))


def requested_by(run: Run) -> str:
    if run.requested_by_id:
        return run.requested_by.get_username()
    return "schedule" if run.schedule_key else "command or system"


def stat_items(stats: dict) -> list[tuple[str, object]]:
    """A run's counters for people: ("sessions retired", 3), in a stable order."""
    return [(key.replace("_", " "), value) for key, value in sorted((stats or {}).items())]


def runs_base():
    return Run.objects.select_related("requested_by", "plan", "application").defer(
        "claim_token", "claimed_by"
    )


@dataclass(frozen=True)
class RunRow:
    run: Run
    requested_by: str
    stats: list[tuple[str, object]]
    application: Run | None  # for a dry-run: the run applying its plan, if any

    @property
    def polling(self) -> bool:
        return is_active(self.run) or is_active(self.application)


def run_page(*, page: int | str = 1, per_page: int = 25) -> Page:
    """Runs, newest first, as RunRows. Two queries (count and page)."""
    page_obj = Paginator(runs_base().order_by("-created_at", "-id"), per_page).get_page(page)
    page_obj.object_list = [
        RunRow(run, requested_by(run), stat_items(run.stats), application_of(run))
        for run in page_obj.object_list
    ]
    return page_obj


# --- a dry-run's report -------------------------------------------------------------------


@dataclass
class AppTotals:
    app_name: str
    sessions: int = 0
    records: int = 0
    new_records: int = 0
    tokens: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    applied: int = 0
    refused: int = 0


@dataclass
class ReportSummary:
    apps: list[AppTotals]
    reasons: list[str]
    sessions: int = 0
    records: int = 0
    new_records: int = 0
    tokens: int = 0
    pending: int = 0
    applied: int = 0
    refused: int = 0

    @property
    def entries(self) -> int:
        return self.sessions + self.records


def report_summary(run: Run) -> ReportSummary:
    """Per app: sessions, records, tokens, reasons and apply outcomes. One query."""
    rows = (
        PlanEntry.objects.filter(run=run)
        .values("app_name", "kind", "reason", "apply_status")
        .annotate(
            n=Count("id"),
            tokens=Sum("tokens"),
            new=Count("id", filter=Q(record_id__isnull=True)),
        )
        .order_by("app_name")
    )
    apps: dict[str, AppTotals] = {}
    reasons: set[str] = set()
    summary = ReportSummary(apps=[], reasons=[])
    for row in rows:
        app = apps.setdefault(row["app_name"], AppTotals(row["app_name"]))
        n = row["n"]
        if row["kind"] == EntryKind.SESSION:
            app.sessions += n
        else:
            app.records += n
            app.new_records += row["new"]
            app.tokens += row["tokens"] or 0
            app.by_reason[row["reason"]] = app.by_reason.get(row["reason"], 0) + n
        reasons.add(row["reason"])
        if row["apply_status"] == ApplyStatus.APPLIED:
            app.applied += n
        elif row["apply_status"] == ApplyStatus.REFUSED:
            app.refused += n
        else:
            summary.pending += n
    summary.apps = [apps[a] for a in sorted(apps)]
    summary.reasons = sorted(r for r in reasons if r)
    for app in summary.apps:
        summary.sessions += app.sessions
        summary.records += app.records
        summary.new_records += app.new_records
        summary.tokens += app.tokens
        summary.applied += app.applied
        summary.refused += app.refused
    return summary


@dataclass(frozen=True)
class ReportRow:
    entry: PlanEntry
    # A snippet of the record's text for records that exist; None for sessions and for
    # records the plan's own ingest would create (no row yet), or that are gone.
    snippet: str | None


SNIPPET_CHARS = 160


def report_page(
    run: Run,
    *,
    app_name: str = "",
    user_id: str = "",
    kind: str = "",
    reason: str = "",
    apply_status: str = "",
    page: int | str = 1,
    per_page: int = 50,
) -> Page:
    """The report's entries grouped by app and user (sessions first, then records by score).

    Three queries: count, the page, and the text of the page's records.
    """
    qs = PlanEntry.objects.filter(run=run)
    if app_name:
        qs = qs.filter(app_name=app_name)
    if user_id:
        qs = qs.filter(user_id__icontains=user_id)
    if kind:
        qs = qs.filter(kind=kind)
    if reason:
        qs = qs.filter(reason=reason)
    if apply_status:
        qs = qs.filter(apply_status=apply_status)
    # "session" sorts after "record": descending puts a user's sessions first.
    qs = qs.order_by("app_name", "user_id", "-kind", "score", "id")
    page_obj = Paginator(qs, per_page).get_page(page)
    entries = list(page_obj.object_list)
    ids = [e.record_id for e in entries if e.kind == EntryKind.RECORD and e.record_id]
    texts = {}
    if ids:
        texts = dict(
            MemoryRecord.objects.filter(id__in=ids).values_list("id", "content").order_by()
        )
    page_obj.object_list = [
        ReportRow(e, _snippet(texts.get(e.record_id)) if e.record_id else None) for e in entries
    ]
    return page_obj


def _snippet(text: str | None) -> str | None:
    if text is None:
        return None
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def failed_items(run: Run, limit: int = 50) -> list:
    """The work items of a run that failed, with their messages (at most ``limit``)."""
    return list(
        run.items.filter(status=ItemStatus.FAILED)
        .order_by("id")
        .values("app_name", "user_id", "users", "outcome")[:limit]
    )


def run_states() -> dict[tuple[str, str], int]:
    """(kind, status) -> runs, every combination present (0 when none)."""
    counts = {(k.value, s.value): 0 for k in RunKind for s in RunStatus}
    for row in Run.objects.values("kind", "status").annotate(n=Count("id")).order_by():
        counts[row["kind"], row["status"]] = row["n"]
    return counts


def last_run_durations() -> dict[str, float]:
    """kind -> seconds from start to finish of its latest finished run (dry-runs included)."""
    durations = {}
    for kind in RunKind:
        run = (
            Run.objects.filter(kind=kind, started_at__isnull=False, finished_at__isnull=False)
            .order_by("-finished_at")
            .values("started_at", "finished_at")
            .first()
        )
        if run:
            durations[kind.value] = (run["finished_at"] - run["started_at"]).total_seconds()
    return durations


# --- per-user sizes over time (the daily roll-ups' snapshots) ----------------------------


@dataclass(frozen=True)
class SizeHistory:
    """Per day, for one app: records and tokens per user (p50, p99, max) and the caps in
    force, as the roll-up measured them that day. None: no measurement that day."""

    days: list
    sizes: dict[str, dict[str, list[float | None]]]  # {"records": {"p50": [...]}, ...}
    caps: dict[str, list[float | None]]  # {"records": [...], "tokens": [...]}

    def first_measured(self):
        measured = [d for i, d in enumerate(self.days) if self.caps["records"][i] is not None]
        return measured[0] if measured else None


SIZE_STATS = ("p50", "p99", "max")
CAP_METRICS = {"records": "max_records", "tokens": "max_tokens"}


def size_history(now, app_name: str, *, days: int = 30) -> SizeHistory:
    """The last ``days`` days of snapshots from ``DailyMetric``. One query. Only these
    metrics are read, by name: nothing else (erasure figures above all) reaches them."""
    first = now.date() - timedelta(days=days - 1)
    day_list = [first + timedelta(days=i) for i in range(days)]
    index = {d: i for i, d in enumerate(day_list)}
    names = {f"{c}_{s}": (c, s) for c in CAP_METRICS for s in SIZE_STATS}
    caps_of = {name: column for column, name in CAP_METRICS.items()}
    sizes = {c: {s: [None] * days for s in SIZE_STATS} for c in CAP_METRICS}
    caps: dict[str, list[float | None]] = {c: [None] * days for c in CAP_METRICS}
    rows = DailyMetric.objects.filter(
        app_name=app_name, day__gte=first, day__lte=now.date(), name__in=[*names, *caps_of]
    ).values_list("day", "name", "value")
    for day, name, value in rows.order_by():
        i = index[day]
        if name in names:
            column, stat = names[name]
            sizes[column][stat][i] = value
        else:
            caps[caps_of[name]][i] = value
    return SizeHistory(days=day_list, sizes=sizes, caps=caps)

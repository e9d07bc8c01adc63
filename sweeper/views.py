"""The Sweeps pages: runs with live progress, starting runs, a dry-run's report and
applying its plan. Views stay thin: selectors read, ``sweeper.staff`` writes."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from memadmin.htmx import render_page, vary_on_htmx
from memadmin.roles import OPS, has_role, role_required, viewer_required
from records.ids import decimal_id
from records.selectors.apps import known_apps

from . import plans, staff
from .forms import ReportFilterForm, StartRunForm
from .models import Run, RunKind, RunStatus
from .selectors import (
    application_of,
    failed_items,
    needs_polling,
    report_page,
    report_summary,
    requested_by,
    run_page,
    runs_base,
    stat_items,
)

LIST_TEMPLATE = "sweeper/sweeps.html"
RUN_TEMPLATE = "sweeper/run.html"
# A report page fits a screen or two at 1,280 px; the summary above counts every entry.
REPORT_PER_PAGE = 20


def _start_form(data=None, *, dry_run: bool, apps=None) -> StartRunForm:
    return StartRunForm(
        data,
        prefix="dry" if dry_run else "real",
        dry_run=dry_run,
        apps=known_apps() if apps is None else apps,
        today=timezone.now().date(),
    )


@viewer_required
def sweeps(request):
    return _list_page(request)


def _list_page(request, *, dry_form=None, real_form=None, confirm=None, status=200):
    page = run_page(page=request.GET.get("page", 1))
    started = _started_run(request)
    follow_started = started is not None and needs_polling(started)
    context = {
        "page": page,
        "polling": any(row.polling for row in page.object_list) or follow_started,
        "confirm": confirm,
        "started": started,
        "started_title": _title(started) if started else "",
    }
    if has_role(request.user, OPS) and not request.htmx:
        apps = known_apps()
        context["dry_form"] = dry_form or _start_form(dry_run=True, apps=apps)
        context["real_form"] = real_form or _start_form(dry_run=False, apps=apps)
    return render_page(request, LIST_TEMPLATE, "run-table", context, status=status)


@require_POST
@role_required(OPS)
def start(request):
    """Dry-runs start at once; a real run is reviewed first (step=confirm starts it)."""
    dry_run = request.POST.get("mode") != "real"
    form = _start_form(request.POST, dry_run=dry_run)
    bound = {"dry_form" if dry_run else "real_form": form}
    if not form.is_valid():
        return _list_page(request, **bound, status=422)
    if not dry_run and request.POST.get("step") != "confirm":
        return _list_page(request, **bound, confirm=_confirm_text(form))
    run = staff.start_run(
        request.user,
        form.cleaned_data["kind"],
        dry_run=dry_run,
        app_name=form.cleaned_data["app"],
        as_of=form.as_of_datetime(timezone.now()) if dry_run else None,
    )
    # Not a one-off message: the notice follows the run (queued, running, done + link).
    return redirect(reverse("sweeper:sweeps") + f"?started={run.pk}")


def _started_run(request) -> Run | None:
    """The run just started from this page (?started=id), whose notice the table keeps live."""
    pk = request.GET.get("started", "")
    run_id = decimal_id(pk)
    return None if run_id is None else runs_base().filter(pk=run_id).first()


def _confirm_text(form: StartRunForm) -> str:
    apps = f"app {form.cleaned_data['app']}" if form.cleaned_data["app"] else "every app"
    if form.cleaned_data["kind"] == RunKind.SWEEP:
        return (
            f"Retire every idle session of {apps} now: each is ingested into memory (with "
            "the usual cap enforcement), its artifacts are deleted, then the session is "
            "deleted. This cannot be undone."
        )
    return (
        f"Enforce the TTL and the caps for every user of {apps} now: expired records and "
        "the lowest-scoring records over a cap are evicted (pinned records never). This "
        "cannot be undone."
    )


def _title(run: Run) -> str:
    what = {
        RunKind.SWEEP: "idle-session sweep",
        RunKind.ENFORCE: "cap enforcement",
        RunKind.APPLY: "plan application",
    }.get(run.kind, run.kind)
    return f"Dry-run {what}" if run.dry_run else what[:1].upper() + what[1:]


# --- one run ------------------------------------------------------------------------------


def _query(request) -> str:
    """The report's filters, for pager, poll and refresh links."""
    params = request.GET.copy()
    for key in ("page", "part", "polling"):
        params.pop(key, None)
    return params.urlencode()


def _status_context(request, run: Run, *, confirm=None, apply_error: str = "") -> dict:
    polling = needs_polling(run)
    application = application_of(run)
    context = {
        "run": run,
        "title": _title(run),
        "requested_by": requested_by(run),
        "stats": stat_items(run.stats),
        "application": application,
        "application_stats": stat_items(application.stats) if application else [],
        "failed": failed_items(run) if run.status == RunStatus.FAILED else [],
        "polling": polling,
        # The run (or its plan's application) finished since the last poll: the report's
        # entries changed, so the status swap also reloads the report table once.
        "refresh_report": run.dry_run and not polling and request.GET.get("polling") == "1",
        "confirm": confirm,
        "apply_error": apply_error,
        "query": _query(request),
    }
    if context["refresh_report"]:  # with the per-app counts (Applied, Refused), out of band
        context["summary"] = report_summary(run)
    return context


def _report_context(request, run: Run) -> dict:
    form = ReportFilterForm(request.GET)
    return {
        "run": run,
        "form": form,
        "page": report_page(
            run, **form.filters(), page=request.GET.get("page", 1), per_page=REPORT_PER_PAGE
        ),
        "query": _query(request),
    }


@viewer_required
@vary_on_htmx
def run_detail(request, pk):
    run = get_object_or_404(runs_base(), pk=pk)
    if request.htmx and request.GET.get("part") == "status":
        return render(request, f"{RUN_TEMPLATE}#run-status", _status_context(request, run))
    if request.htmx:
        return render(request, f"{RUN_TEMPLATE}#report-table", _report_context(request, run))
    return _run_page(request, run)


def _run_page(request, run: Run, *, status=200, **status_kwargs):
    context = _status_context(request, run, **status_kwargs)
    if run.dry_run and not request.htmx:  # htmx swaps the status part only
        context.update(_report_context(request, run))
        context["summary"] = report_summary(run)
    return render_page(request, RUN_TEMPLATE, "run-status", context, status=status)


@require_POST
@role_required(OPS)
def apply(request, pk):
    """Review (how many sessions and records) and then apply exactly this plan, once."""
    plan = get_object_or_404(runs_base(), pk=pk)
    try:
        if request.POST.get("step") != "confirm":
            plans.check_appliable(plan)
            return _run_page(request, plan, confirm=staff.pending_counts(plan))
        run = staff.apply_plan(request.user, plan)
    except plans.PlanError as error:
        return _run_page(request, plan, apply_error=str(error), status=409)
    messages.success(
        request, f"Applying the plan of dry-run #{plan.pk} as run #{run.pk}; progress below."
    )
    if request.htmx:
        return _run_page(request, get_object_or_404(runs_base(), pk=pk))
    return redirect(reverse("sweeper:run", args=[plan.pk]))

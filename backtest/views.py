"""The Policies page's backtest and tuning: start one (ops), watch its progress, read
its report. Applying a tuned candidate is the Policies page's own change (records)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memadmin.htmx import render_page
from memadmin.roles import OPS, check_role, has_role, viewer_required
from records.policies import policy_for
from records.selectors.apps import is_known_app

from . import charts, runs, service, tasks, tune
from .forms import BacktestForm, TuneForm
from .models import BacktestRun, TuneRun

RUN_TEMPLATE = "backtest/run.html"
TUNE_TEMPLATE = "backtest/tune.html"


@require_POST
@viewer_required
def start(request, app):
    check_role(request, OPS)
    if not is_known_app(app):
        return render(request, "backtest/start.html", {"app": app, "form": None}, status=404)
    form = BacktestForm(request.POST)
    candidate = form.candidate(app) if form.is_valid() else None
    if candidate is not None:
        try:
            run = runs.start(
                request.user,
                app,
                form.cleaned_data["days"],
                candidate,
                enqueue=tasks.run_backtest.delay,
            )
        except service.BacktestError as exc:
            form.add_error("days", str(exc))
        else:
            return redirect(reverse("backtest:run", args=[run.pk]))
    return render(request, "backtest/start.html", {"app": app, "form": form}, status=422)


@require_GET
@viewer_required
def run(request, pk):
    backtest = get_object_or_404(BacktestRun, pk=pk)
    report = backtest.report or {}
    context = {
        "run": backtest,
        "report": report,
        "chart": charts.current_vs_candidate(report) if report else None,
    }
    return render_page(request, RUN_TEMPLATE, "run-main", context)


@require_POST
@viewer_required
def tune_start(request, app):
    check_role(request, OPS)
    if not is_known_app(app):
        return render(request, "backtest/tune_start.html", {"app": app, "form": None}, status=404)
    form = TuneForm(request.POST)
    if form.is_valid():
        try:
            run = runs.start_tune(
                request.user, app, form.cleaned_data["days"], enqueue=tasks.run_tune.delay
            )
        except service.BacktestError as exc:
            form.add_error("days", str(exc))
        else:
            return redirect(reverse("backtest:tune_run", args=[run.pk]))
    return render(request, "backtest/tune_start.html", {"app": app, "form": form}, status=422)


@require_GET
@viewer_required
def tune_run(request, pk):
    tuning = get_object_or_404(TuneRun, pk=pk)
    result = tuning.result or {}
    can_apply = has_role(request.user, OPS)
    if can_apply and result.get("best"):
        best = result["best"]
        applied = _apply_values(tuning.app_name, best)
        result = {**result, "best": [{**c, "apply": a} for c, a in zip(best, applied, strict=True)]}
    context = {
        "run": tuning,
        "result": result,
        # A result stored before the rounds were kept names its one sample only.
        "rounds": tune.rounds_text(result.get("samples") or []),
        "can_apply": can_apply,
    }
    return render_page(request, TUNE_TEMPLATE, "tune-main", context)


WEIGHTS = ("w_recency", "w_frequency", "w_importance")


def _apply_values(app_name: str, best: list[dict]) -> list[dict]:
    """Per candidate, what its Apply form sends: the current policy with the tuned
    values on top (the three weights together, so they still sum to 1). Not the policy
    as it was when the tuning ran: a cap or TTL changed since is kept, not reverted."""
    current = policy_for(app_name).snapshot()
    out = []
    for candidate in best:
        tuned = {name for name, _old, _new in candidate.get("changes") or []}
        if tuned & set(WEIGHTS):
            tuned |= set(WEIGHTS)
        values = candidate.get("values") or {}
        out.append({**current, **{f: values[f] for f in tuned if f in values}})
    return out

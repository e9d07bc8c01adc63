"""Importance rules: the defaults, staff rules, each app's effective set, a "try it" box,
and re-scoring an app. Views stay thin: selectors read, ``staff`` writes."""

from __future__ import annotations

import copy

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods, require_POST

from memadmin.htmx import render_page
from memadmin.roles import OPS, check_role, has_role, role_required, viewer_required

from .. import rules as pure_rules
from .. import staff
from ..forms import RescoreForm, RuleForm, TryRulesForm
from ..models import ImportanceRule
from ..selectors import decide_sample, effective_rules, rescore_scope, rule_apps, staff_rules

TEMPLATE = "records/rules.html"
DEFAULTS = {r.name: r for r in pure_rules.DEFAULT_RULES}


def _selected_app(request, apps: list[str]) -> str:
    """The app whose effective rules are shown; "" is any app without rules of its own."""
    for params in (request.GET, request.POST):
        if "app" in params:
            return params["app"].replace("\x00", "")[:128]  # exactly as named; no app holds NUL
    return apps[0] if apps else ""


def _prefilled_form(request) -> RuleForm:
    """An empty rule, or a copy of a shipped default to override. Neither names the app
    being viewed: the scope (every app or one) is the user's explicit choice."""
    default = DEFAULTS.get(request.GET.get("from", ""))
    if default is None:
        return RuleForm(initial={"enabled": True})
    return RuleForm(
        initial={
            "name": default.name,
            "pattern": default.pattern,
            "action": default.action,
            "importance": default.importance,
            "pin": default.pin,
            "category": default.category,
            "enabled": request.GET.get("enabled") != "0",
        }
    )


def _page(request, *, form=None, try_form=None, decision=None, rescore=None, status=200):
    rows = staff_rules()
    apps = rule_apps(rows)
    app = _selected_app(request, apps)
    is_ops = has_role(request.user, OPS)
    context = {
        "rows": rows,
        "apps": apps,
        "selected": app,
        "effective": effective_rules(app, rows),
        "defaults": pure_rules.DEFAULT_RULES,
        "try_form": try_form or TryRulesForm(initial={"app": app}),
        "decision": decision,
        "rescore": rescore,
        "form": (form or _prefilled_form(request)) if is_ops else None,
        "unmatched_importance": pure_rules.UNMATCHED_IMPORTANCE,
    }
    return render_page(request, TEMPLATE, "effective", context, status=status)


@viewer_required
def rules(request):
    return _page(request)


@require_POST
@role_required(OPS)
def rule_new(request):
    form = RuleForm(request.POST)
    return _save(request, form, on_error=lambda: _page(request, form=form, status=422))


@require_http_methods(["GET", "POST"])
@viewer_required
def rule(request, pk):
    row = get_object_or_404(ImportanceRule.objects.select_related("updated_by"), pk=pk)
    if request.method == "GET":
        form = RuleForm(instance=row) if has_role(request.user, OPS) else None
        context = {"row": row, "form": form, "problems": row.problems()}
        return render(request, "records/rule.html", context)
    check_role(request, OPS)
    # The form validates onto a copy: the page of a refused edit shows the stored rule.
    form = RuleForm(request.POST, instance=copy.copy(row))

    def on_error():
        context = {"row": row, "form": form, "problems": row.problems()}
        return render(request, "records/rule.html", context, status=422)

    return _save(request, form, on_error=on_error)


def _save(request, form: RuleForm, *, on_error):
    if not form.is_valid():
        return on_error()
    try:
        saved = staff.save_rule(request.user, form.instance, reason=form.cleaned_data["note"])
    except ValidationError as error:
        form.add_error(None, error)
        return on_error()
    where = f"app {saved.app_name}" if saved.app_name else "every app"
    messages.success(
        request,
        f"Saved rule {saved.name} for {where}. It applies to new records; re-score the app "
        "to apply it to existing ones.",
    )
    return redirect(reverse("records:rules") + "?" + urlencode({"app": saved.app_name}))


@require_POST
@viewer_required
def rule_try(request):
    """What the effective rules decide for a sample text. Nothing is stored.

    POST keeps the sample (possibly personal data) out of URLs and access logs.
    """
    form = TryRulesForm(request.POST)
    decision = None
    if form.is_valid():
        decision = decide_sample(form.cleaned_data["app"], form.cleaned_data["text"])
    status = 200 if form.is_valid() else 422
    if request.htmx:
        context = {
            "try_form": form,
            "decision": decision,
            "unmatched_importance": pure_rules.UNMATCHED_IMPORTANCE,
        }
        return render(request, f"{TEMPLATE}#try-result", context, status=status)
    return _page(request, try_form=form, decision=decision, status=status)


@require_POST
@role_required(OPS)
def rule_rescore(request):
    """Review what a re-score covers, then queue it (step=confirm)."""
    form = RescoreForm(request.POST)
    if not form.is_valid():
        for problem in [e for errors in form.errors.values() for e in errors]:
            messages.error(request, problem)
        return redirect(reverse("records:rules"))
    app = form.cleaned_data["app"]
    scope = rescore_scope(app)
    if not scope.records:
        messages.error(request, f"App {app} has no records to re-score.")
        return redirect(reverse("records:rules") + "?" + urlencode({"app": app}))
    if request.POST.get("step") != "confirm":
        return _page(request, rescore={"app": app, "scope": scope})
    staff.request_rescore(request.user, app, reason=form.cleaned_data["note"])
    messages.success(
        request,
        f"Re-scoring the {scope.records:,} records of {app} in the background with the "
        "current rules.",
    )
    return redirect(reverse("records:rules") + "?" + urlencode({"app": app}))

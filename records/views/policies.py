"""Policies: the list, and per app the values, an edit with its impact, the history."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from memadmin.htmx import render_page
from memadmin.roles import OPS, check_role, has_role, viewer_required

from .. import staff
from ..forms import POLICY_LABELS, NewPolicyForm, PolicyForm
from ..models import POLICY_FIELDS, EvictionReason, Policy
from ..preview import policy_impact
from ..selectors import is_known_app, policy_history, policy_rows
from .common import current_policy

TEMPLATE = "records/policy.html"


@require_http_methods(["GET", "POST"])
@viewer_required
def policies(request):
    if request.method == "GET":
        form = NewPolicyForm() if has_role(request.user, OPS) else None
        return _policies_page(request, form)
    check_role(request, OPS)
    form = NewPolicyForm(request.POST)
    if form.is_valid():
        try:
            created = staff.create_policy(
                request.user, form.cleaned_data["app_name"], reason=form.cleaned_data["reason"]
            )
        except ValidationError as error:
            form.add_error(None, error)
        else:
            messages.success(request, f"Created the {created.app_name} policy (the defaults).")
            return redirect(reverse("records:policy", args=[created.app_name]))
    return _policies_page(request, form, status=422)


def _policies_page(request, form, status=200):
    context = {"policies": policy_rows(), "form": form}
    return render(request, "records/policies.html", context, status=status)


@require_http_methods(["GET", "POST"])
@viewer_required
def policy(request, app):
    current = current_policy(app)
    if current.pk is None and not is_known_app(app):
        raise Http404("No policy and no data for this app.")
    if request.method == "GET":
        form = PolicyForm(instance=current) if has_role(request.user, OPS) else None
        return _page(request, current, form=form)

    check_role(request, OPS)
    # A fresh copy: form validation writes the proposed values onto its instance.
    form = PolicyForm(request.POST, instance=current_policy(app))
    if not form.is_valid():
        return _page(request, current, form=form, status=422)
    changes = form.changes()
    if not changes:
        form.add_error(None, "Nothing changed: every value is the current one.")
        return _page(request, current, form=form, status=422)
    if request.POST.get("step") != "confirm":
        return _review(request, current, form)
    try:
        saved = staff.change_policy(
            request.user,
            app,
            changes,
            base_version=_int(request.POST.get("base_version")),
            note=form.cleaned_data["note"],
            preset=form.cleaned_data.get("preset", ""),
        )
    except staff.StalePolicyError as stale:
        form = PolicyForm(request.POST, instance=stale.current)
        form.is_valid()
        return _review(
            request,
            stale.current,
            form,
            stale=f"Someone saved version {stale.current.version} meanwhile; "
            "here is the impact against it. Confirm again to save.",
            status=409,
        )
    except ValidationError as error:  # values valid in the form but refused on save
        form.add_error(None, error)
        return _page(request, current, form=form, status=422)
    messages.success(request, f"Saved {app} policy version {saved.version}.")
    if not request.htmx:
        return redirect(reverse("records:policy", args=[app]))
    return _page(request, saved, form=PolicyForm(instance=saved))


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _page(request, policy: Policy, *, form=None, status=200):
    context = {
        "policy": policy,
        "form": form,
        "history": policy_history(policy.app_name, page=request.GET.get("page", 1)),
        "fields": _fields(policy),
    }
    return render_page(request, TEMPLATE, "policy-main", context, status=status)


def _fields(policy: Policy) -> list[tuple[str, str, object, str]]:
    """(name, label, value, help) of every policy value, for the current-values table."""
    return [
        (f, POLICY_LABELS[f], getattr(policy, f), Policy._meta.get_field(f).help_text)
        for f in POLICY_FIELDS
    ]


def _caused(impact, baseline) -> dict:
    """What the change itself does: the new values' evictions beyond (or short of) those
    already due with the current ones, which happen at the next enforcement regardless."""
    records = impact.records - baseline.records
    tokens = impact.tokens - baseline.tokens
    return {"records": abs(records), "tokens": abs(tokens), "direction": _sign(records)}


def _reason_words(reason: str) -> str:
    return EvictionReason(reason).label if reason in EvictionReason.values else reason


def _sign(n: int) -> str:
    return "more" if n > 0 else "fewer" if n < 0 else "same"


def _review(request, current: Policy, form: PolicyForm, *, stale="", status=200):
    """The confirm step: what changes, and what it would evict now."""
    now = timezone.now()
    proposed = form.instance
    impact = policy_impact(current.app_name, proposed.params(), now)
    baseline = policy_impact(current.app_name, current.params(), now)
    context = {
        "policy": current,
        "form": form,
        "review": {
            "changes": [
                (POLICY_LABELS[f], getattr(current, f), v) for f, v in form.changes().items()
            ],
            "impact": impact,
            "baseline": baseline,
            "caused": _caused(impact, baseline),
            "reasons": [(_reason_words(r), n) for r, n in impact.by_reason.items()],
            "base_version": current.version,
            "stale": stale,
        },
        "history": policy_history(current.app_name),
        "fields": _fields(current),
    }
    return render_page(request, TEMPLATE, "policy-main", context, status=status)

"""Users: the list, one user's records against the caps, staff changes and previews."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from memadmin.htmx import render_page, vary_on_htmx
from memadmin.roles import OPS, SUPPORT, has_role, role_required, viewer_required

from .. import staff
from ..forms import ImportanceForm, WhatIfForm
from ..models import MemoryRecord
from ..preview import preview_user_victims
from ..selectors import USER_SORTS, natural_descending, scored_record, scored_records, user_page
from .common import current_policy

USER_COLUMNS = [
    ("app", "App"),
    ("user", "User"),
    ("records", "Records"),
    ("tokens", "Tokens"),
    ("pinned", "Pinned"),
    ("activity", "Last written"),
]
RECORDS_CHANGED = "records-changed"  # the user page reloads what a staff change affects
# Pages of a screen or two at 1,280 px, not meters of scrolling: the counts cover all rows.
PREVIEW_LIMIT = 10  # victims listed in a preview, in eviction order
RECORDS_PER_PAGE = 20


@viewer_required
def users(request):
    """Every (app, user) with record count, tokens and cap use; htmx swaps the table only."""
    search = request.GET.get("q", "").replace("\x00", "").strip()[:200]  # no id holds NUL
    sort = request.GET.get("sort", "records")
    if sort not in USER_SORTS:
        sort = "records"
    direction = request.GET.get("dir")
    descending = (
        natural_descending(sort) if direction not in ("asc", "desc") else (direction == "desc")
    )
    page = user_page(
        search=search, sort=sort, descending=descending, page=request.GET.get("page", 1)
    )
    columns = []
    for key, label in USER_COLUMNS:
        active = key == sort
        # Clicking the sorted column reverses it; another column starts in its natural order.
        next_desc = not descending if active else natural_descending(key)
        columns.append(
            {
                "key": key,
                "label": label,
                "numeric": key in ("records", "tokens", "pinned"),
                "active": active,
                "descending": descending if active else None,
                "dir": "desc" if next_desc else "asc",
            }
        )
    context = {
        "page": page,
        "q": search,
        "sort": sort,
        "dir": "desc" if descending else "asc",
        "columns": columns,
        "query": urlencode({"q": search, "sort": sort, "dir": "desc" if descending else "asc"}),
    }
    return render_page(request, "records/users.html", "user-table", context)


def _victim_reasons(app_name, user_id, params, now) -> tuple[list, dict[int, str]]:
    victims = preview_user_victims(app_name, user_id, params, now)
    return victims, {record.pk: victim.reason for record, victim in victims}


def _user_context(request, app, user, *, whatif: WhatIfForm | None = None) -> dict:
    now = timezone.now()
    policy = current_policy(app)
    params = policy.params()
    victims, reasons = _victim_reasons(app, user, params, now)
    page, summary = scored_records(
        app,
        user,
        params,
        now,
        page=request.GET.get("page", 1),
        per_page=RECORDS_PER_PAGE,
        victim_reasons=reasons,
    )
    context = {
        "app": app,
        "subject": user,  # not "user": that is the logged-in staff member in templates
        "policy": policy,
        "page": page,
        "summary": summary,
        "victim_count": len(victims),
        "now": now,
    }
    if has_role(request.user, OPS):
        whatif = whatif or WhatIfForm(policy=policy)
        context.update(_preview_context(app, user, whatif, now, current=victims))
    return context


def _preview_context(app, user, whatif: WhatIfForm, now, *, current=None) -> dict:
    """The dry-run panel: victims under the form's values (or the policy's, unbound)."""
    if whatif.is_bound and not whatif.is_valid():
        return {"whatif": whatif, "preview": None}
    if whatif.is_bound and whatif.differs_from_policy():
        victims = preview_user_victims(app, user, whatif.params, now)
    else:
        victims = (
            current
            if current is not None
            else _victim_reasons(app, user, whatif.policy.params(), now)[0]
        )
    return {
        "whatif": whatif,
        "preview": {
            "what_if": whatif.is_bound and whatif.differs_from_policy(),
            "count": len(victims),
            "tokens": sum(v.tokens for _, v in victims),
            "shown": victims[:PREVIEW_LIMIT],
            "limit": PREVIEW_LIMIT,
        },
    }


@viewer_required
def user_detail(request, app, user):
    context = _user_context(request, app, user)
    return render_page(request, "records/user_detail.html", "records-table", context)


@require_GET
@role_required(OPS)
@vary_on_htmx
def preview(request, app, user):
    """Dry-run with other policy values. Reads only; nothing is evicted or saved."""
    whatif = WhatIfForm(request.GET, policy=current_policy(app))
    status = 200 if whatif.is_valid() else 422
    if not request.htmx:  # without JavaScript: the whole page, with the values applied
        context = _user_context(request, app, user, whatif=whatif)
        return render(request, "records/user_detail.html", context, status=status)
    context = {"app": app, "subject": user, **_preview_context(app, user, whatif, timezone.now())}
    return render(request, "records/user_detail.html#preview", context, status=status)


def _row_response(request, app, user, pk, *, form=None, status=200):
    now = timezone.now()
    params = current_policy(app).params()
    _, reasons = _victim_reasons(app, user, params, now)
    row = scored_record(app, user, pk, params, now, victim_reasons=reasons)
    if row is None:
        raise Http404("No such record for this user.")
    context = {"app": app, "subject": user, "row": row}
    context.update(importance_form=form, importance_pk=pk)
    return render(request, "records/user_detail.html#record-row", context, status=status)


def _done(request, app, user, pk, message):
    if request.htmx:
        response = _row_response(request, app, user, pk)
        # Other rows' ranks, the cap line, the counts and the preview depend on this one.
        response["HX-Trigger-After-Swap"] = RECORDS_CHANGED
        return response
    messages.success(request, message)
    return redirect(reverse("records:user", args=[app, user]))


def _set_pin(request, app, user, pk, service, verb):
    try:
        service(request.user, app, user, pk)
    except MemoryRecord.DoesNotExist:
        raise Http404("No such record for this user.") from None
    return _done(request, app, user, pk, f"Record {pk} {verb}.")


@require_POST
@role_required(SUPPORT)
def pin(request, app, user, pk):
    return _set_pin(request, app, user, pk, staff.pin_record, "pinned")


@require_POST
@role_required(SUPPORT)
def unpin(request, app, user, pk):
    return _set_pin(request, app, user, pk, staff.unpin_record, "unpinned")


@require_POST
@role_required(SUPPORT)
def importance(request, app, user, pk):
    form = ImportanceForm(request.POST)
    if form.is_valid():
        try:
            staff.set_importance(
                request.user,
                app,
                user,
                pk,
                form.cleaned_data["importance"],
                reason=form.cleaned_data["reason"],
            )
        except MemoryRecord.DoesNotExist:
            raise Http404("No such record for this user.") from None
        except ValidationError as error:
            for field, problems in error.message_dict.items():
                for problem in problems:
                    form.add_error(field if field in form.fields else None, problem)
    if form.errors:
        if request.htmx:
            return _row_response(request, app, user, pk, form=form, status=422)
        # Without JavaScript: the page again, not a redirect, so the row (when on this
        # page of the table) keeps what was typed beside its errors.
        for problem in [e for errors in form.errors.values() for e in errors]:
            messages.error(request, problem)
        context = _user_context(request, app, user)
        context.update(importance_form=form, importance_pk=pk)
        return render(request, "records/user_detail.html", context, status=422)
    return _done(request, app, user, pk, f"Importance of record {pk} changed.")

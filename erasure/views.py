"""Erasure pages, for the compliance role only (everyone else gets 403)."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from memadmin.htmx import render_page
from memadmin.pseudonyms import subject_hash
from memadmin.roles import COMPLIANCE, role_required
from records.selectors.apps import known_apps

from . import display, jobs, signing
from .forms import ErasureForm, PasswordCheckForm
from .inventory import SUBJECT_STORES
from .models import ErasureRequest as Request
from .models import ErasureStatus
from .reauth import (
    mark_password_checked,
    max_age,
    password_recently_checked,
    reauth_password_is_right,
)

log = logging.getLogger("memadmin.authz")

STORE_LABELS = [s.label for s in SUBJECT_STORES] + [jobs.REDIS_STORE]


@never_cache
@role_required(COMPLIANCE)
def request_list(request):
    """All requests; a POST finds one user's (by keyed hash: verified requests hold no id).

    The id comes in a POST body, never the URL, which ends up in access logs.
    """
    find = request.POST.get("user", "")[:256] if request.method == "POST" else ""
    requests = Request.objects.all()
    if find:
        requests = requests.filter(subject_hash=subject_hash(find))
    number = request.POST.get("page") if request.method == "POST" else request.GET.get("page")
    context = {
        "page": Paginator(requests, 50).get_page(number),
        "find": find,
        # An old link or bookmark: say why nothing was searched for it.
        "ignored_query": "user" in request.GET,
    }
    return render_page(request, "erasure/list.html", "requests", context)


@never_cache
@role_required(COMPLIANCE)
def submit(request):
    checked = password_recently_checked(request)
    if not checked and request.method != "POST":
        return redirect(f"{reverse('erasure:reauth')}?next={reverse('erasure:submit')}")
    form = ErasureForm(request.POST or None)
    if not checked:
        # The check lapsed while the form was being filled in: ask for the password here,
        # the typed fields kept (in the page only), rather than sending them away.
        password = request.POST.get("password", "")
        if not (password and reauth_password_is_right(request, password)):
            if password:
                log.warning("erasure re-authentication failed user=%s", request.user.get_username())
            form.is_valid()  # its own errors shown too
            form.add_error(
                None,
                "That is not your password; nothing was submitted."
                if password
                else "Confirm your password to submit; nothing was submitted yet.",
            )
            context = {"form": form, "apps": known_apps(), "ask_password": True}
            return render(request, "erasure/submit.html", context, status=403)
        mark_password_checked(request)
    if request.method == "POST" and form.is_valid():
        try:
            req = jobs.submit(
                app_name=form.chosen_app,
                user_id=form.cleaned_data["user_id"],
                user_id_again=form.cleaned_data["user_id_again"],
                ticket=form.cleaned_data["ticket"],
                reason=form.cleaned_data["reason"],
                requested_by=request.user,
            )
        except jobs.ErasureRefused as exc:
            form.add_error(None, str(exc))
        else:
            # Never the user id in a message: messages live in the session or a cookie.
            messages.success(request, f"Erasure #{req.pk} submitted.")
            return redirect("erasure:detail", pk=req.pk)
    return render(request, "erasure/submit.html", {"form": form, "apps": known_apps()})


@never_cache
@role_required(COMPLIANCE)
def reauth(request):
    next_url = request.POST.get("next") or request.GET.get("next") or reverse("erasure:list")
    if not url_has_allowed_host_and_scheme(
        next_url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        next_url = reverse("erasure:list")
    form = PasswordCheckForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if reauth_password_is_right(request, form.cleaned_data["password"]):
            mark_password_checked(request)
            return redirect(next_url)
        log.warning("erasure re-authentication failed user=%s", request.user.get_username())
        form.add_error("password", "That is not your password.")
    return render(
        request,
        "erasure/reauth.html",
        {"form": form, "next": next_url, "minutes": max(1, max_age() // 60)},
    )


@never_cache  # it shows the user id until the request is verified
@role_required(COMPLIANCE)
def detail(request, pk: int):
    req = get_object_or_404(Request, pk=pk)
    rows = []
    for label in STORE_LABELS:
        p = req.progress.get(label, {})
        v = req.verification.get(label, {})
        name = display.store_name(label)
        rows.append({"label": label, "name": name, **p, "remaining": v.get("remaining")})
    context = {
        "req": req,
        "rows": rows,
        "total": sum(p.get("deleted", 0) for p in req.progress.values()),
        "audit": [(e, display.describe(e.action, e.detail)) for e in req.audit.all()],
        "search_index": req.verification.get(jobs.SEARCH_INDEX),
    }
    return render_page(request, "erasure/detail.html", "progress", context)


@role_required(COMPLIANCE)
@require_POST
def retry(request, pk: int):
    get_object_or_404(Request, pk=pk)
    try:
        jobs.retry(pk, actor=request.user.get_username())
    except jobs.ErasureRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Erasure #{pk} queued again.")
    return redirect("erasure:detail", pk=pk)


@role_required(COMPLIANCE)
@require_POST
def receipt(request, pk: int):
    """Download a receipt. A POST (with CSRF), since each download is audited: a GET from
    another site cannot add entries."""
    req = get_object_or_404(Request, pk=pk)
    if req.status != ErasureStatus.VERIFIED or not req.receipt:
        raise Http404("This request has no receipt: only verified erasures have one.")
    jobs.audit(
        req,
        "receipt_downloaded",
        actor=request.user.get_username(),
        at=timezone.now(),
        detail={"receipt_sha256": req.receipt_sha256},
    )
    response = HttpResponse(jobs.receipt_bytes(req.receipt), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="erasure-{req.pk}-receipt.json"'
    return response


@login_not_required
@require_GET
def receipt_keys(request):
    """The public keys that verify receipts (a JWK set). Public on purpose: whoever holds
    a receipt must be able to check it without an account here."""
    response = JsonResponse(signing.published_keys())
    response["Cache-Control"] = "public, max-age=300"
    return response

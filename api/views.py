"""The ops page for API keys: create (the token is shown once), list, revoke."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from memadmin.roles import OPS, role_required
from records.selectors.apps import known_apps

from . import keys
from .forms import NewApiKeyForm


def _page(request, form, new_key=None, status=200):
    # A key may be made for an app before its agents first write: offer those too.
    apps = sorted(set(known_apps()) | set(keys.list_keys().values_list("app_name", flat=True)))
    context = {
        "keys": keys.list_keys(),
        "form": form,
        "new_key": new_key,
        "known_apps": apps,
    }
    return render(request, "api/keys.html", context, status=status)


@never_cache  # the page may carry a new token: never keep it in a cache
@role_required(OPS)
def api_keys(request):
    if request.method != "POST":
        return _page(request, NewApiKeyForm())
    form = NewApiKeyForm(request.POST)
    if form.is_valid():
        try:
            new_key = keys.create_key(
                form.cleaned_data["app_name"],
                form.cleaned_data["name"],
                timezone.now(),
                created_by=request.user,
            )
        except ValueError as exc:
            form.add_error(None, str(exc))
        else:
            # Rendered, not redirected: the token must not pass through the session or
            # the messages cookie. This answer is the only place it ever appears.
            return _page(request, NewApiKeyForm(), new_key=new_key, status=201)
    return _page(request, form, status=400)


@require_POST
@role_required(OPS)
def revoke(request, key_id: int):
    try:
        key = keys.revoke_key(key_id, timezone.now(), revoked_by=request.user)
    except keys.UnknownApiKey as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Revoked {key.prefix}… ({key.app_name}: {key.name}).")
    return redirect("api:keys")

from __future__ import annotations

from django.shortcuts import render

from ..models import Policy


def current_policy(app_name: str) -> Policy:
    """The app's policy, or the defaults (unsaved) for an app that has none yet.

    Pages only read; creating the policy row is left to the services.
    """
    return Policy.objects.filter(app_name=app_name).first() or Policy(app_name=app_name)


def render_page(request, template: str, partial: str, context: dict, status: int = 200):
    """The full page on a normal request, the named partial on an htmx request."""
    name = f"{template}#{partial}" if request.htmx else template
    return render(request, name, context, status=status)

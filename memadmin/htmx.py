"""htmx responses: one page view serves the whole page or, to htmx, one partial of it."""

from __future__ import annotations

from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django.views.decorators.vary import vary_on_headers

# For views that answer htmx differently without render_page: caches must key on the header.
vary_on_htmx = vary_on_headers("HX-Request")


def render_page(request, template: str, partial: str, context: dict, status: int = 200):
    """The full page on a normal request, the named partial on an htmx request.

    ``Vary: HX-Request``: the same address answers two ways, so no cache may serve one for
    the other (a partial shown as the whole page after Back)."""
    name = f"{template}#{partial}" if request.htmx else template
    response = render(request, name, context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response

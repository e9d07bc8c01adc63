"""Requests no view can read, refused before any middleware reads them.

A ``Content-Length`` that is not a number of bytes made django-prometheus's middleware
(first in the chain: it counts every request) fail with a 500 under ``runserver``, which
``make run`` serves with; gunicorn refuses such a request itself.
"""

from __future__ import annotations

from django.http import JsonResponse


def content_length_guard(get_response):
    def middleware(request):
        length = request.META.get("CONTENT_LENGTH")
        if length and not (length.isascii() and length.isdigit()):
            return JsonResponse(
                {"detail": "Content-Length must be a number of bytes.", "code": "bad_request"},
                status=400,
            )
        return get_response(request)

    return middleware

"""Recent password checks, kept in the staff member's session.

Submitting an erasure needs a password check within ``ERASURE_REAUTH_SECONDS`` (login
counts as one); older logins re-enter the password first. The check goes through
``authenticate`` like a login, so django-axes counts its failures with the login's and
the same lockout (``AXES_FAILURE_LIMIT`` per username and address, cool-off) refuses both.
"""

from __future__ import annotations

import time

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_client_ip_address
from django.conf import settings
from django.contrib.auth import authenticate

SESSION_KEY = "erasure_password_checked_at"


def max_age() -> int:
    return int(settings.MEMADMIN.get("ERASURE_REAUTH_SECONDS", 300))


def mark_password_checked(request) -> None:
    request.session[SESSION_KEY] = time.time()


def password_recently_checked(request) -> bool:
    checked = request.session.get(SESSION_KEY)
    if not isinstance(checked, int | float):
        return False
    return 0 <= time.time() - checked <= max_age()


def reauth_password_is_right(request, password: str) -> bool:
    """Is ``password`` the logged-in staff member's? Counted by django-axes as a login is.

    Once locked out, even the right password is refused (and django-axes' middleware
    answers with the lockout page); a right one before that resets the count, as a
    successful login does.
    """
    username = request.user.get_username()
    user = authenticate(request, username=username, password=password)
    if user is None or user.pk != request.user.pk:
        return False
    if settings.AXES_RESET_ON_SUCCESS:
        AxesProxyHandler.reset_attempts(
            username=username, ip_address=get_client_ip_address(request)
        )
    return True

"""Recent password checks, kept in the staff member's session.

Submitting an erasure needs a password check within ``ERASURE_REAUTH_SECONDS`` (login
counts as one); older logins re-enter the password first.
"""

from __future__ import annotations

import time

from django.conf import settings

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

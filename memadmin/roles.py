"""Staff roles. A role is a Django group; superusers hold every role.

support    pins memory records and sets a record's importance
ops        reviews dry-runs, applies plans, edits policies and rules, re-scores an app,
           manages API keys
compliance submits and tracks erasure jobs
"""

import logging
from functools import wraps

from django.core.exceptions import PermissionDenied

from .pseudonyms import pseudonymous_path

SUPPORT = "support"
OPS = "ops"
COMPLIANCE = "compliance"
ROLES = (SUPPORT, OPS, COMPLIANCE)

log = logging.getLogger("memadmin.authz")


class RoleDenied(PermissionDenied):
    """A 403 that ``check_role`` has logged already (Django's own log line is dropped)."""


def user_roles(user) -> frozenset[str]:
    if not user.is_authenticated or not user.is_active:
        return frozenset()
    if user.is_superuser:
        return frozenset(ROLES)
    cached = getattr(user, "_memadmin_roles", None)
    if cached is None:
        cached = frozenset(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        user._memadmin_roles = cached
    return cached


def has_role(user, *roles: str) -> bool:
    """True when the user holds at least one of ``roles``."""
    return bool(user_roles(user) & set(roles))


def check_role(request, *roles: str) -> None:
    """Raise PermissionDenied (HTTP 403) and log who tried what in one line.

    No payloads, and the path names memory users by pseudonym only."""
    if not has_role(request.user, *roles):
        log.warning(
            "denied user=%s path=%s method=%s needs=%s",
            getattr(request.user, "username", "anonymous") or "anonymous",
            pseudonymous_path(request),
            request.method,
            "|".join(roles),
        )
        raise RoleDenied(f"This action needs the {' or '.join(roles)} role.")


def role_required(*roles: str):
    """View decorator: the user must hold one of ``roles``."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            check_role(request, *roles)
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def viewer_required(view):
    """Pages: any of the staff roles may look; changing things needs the specific role."""
    return role_required(*ROLES)(view)


def roles_context(request) -> dict:
    user = getattr(request, "user", None)
    roles = user_roles(user) if user is not None else frozenset()
    named = ", ".join(sorted(roles))
    return {
        "user_roles": roles,
        # The header's "name · roles", with the roles only when they add something: the
        # role accounts are named after their role, and "support · support" says it twice.
        "roles_label": named if named != getattr(user, "get_username", str)() else "",
        "is_support": SUPPORT in roles,
        "is_ops": OPS in roles,
        "is_compliance": COMPLIANCE in roles,
    }

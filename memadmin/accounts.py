"""Staff accounts, one per role, with generated passwords."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from .roles import ROLES


def ensure_role_groups() -> dict[str, Group]:
    return {role: Group.objects.get_or_create(name=role)[0] for role in ROLES}


@transaction.atomic
def create_role_accounts(reset_passwords: bool = False) -> dict[str, str | None]:
    """Create users ``support``, ``ops`` and ``compliance``.

    Returns {username: password} where the password is only given for accounts
    created (or reset) now; existing passwords are never shown again.
    """
    User = get_user_model()
    groups = ensure_role_groups()
    out: dict[str, str | None] = {}
    for role, group in groups.items():
        user, created = User.objects.get_or_create(username=role, defaults={"is_staff": False})
        user.groups.add(group)
        if created or reset_passwords:
            password = secrets.token_urlsafe(12)
            user.set_password(password)
            user.save()
            out[role] = password
        else:
            out[role] = None
    return out

from __future__ import annotations

from ..models import Policy


def current_policy(app_name: str) -> Policy:
    """The app's policy, or the defaults (unsaved) for an app that has none yet.

    Pages only read; creating the policy row is left to the services.
    """
    return Policy.objects.filter(app_name=app_name).first() or Policy(app_name=app_name)

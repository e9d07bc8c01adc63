"""Which apps exist: the one definition every page, form, command and service uses.

An app is *known* when memadmin has a policy for it or holds any of its agents' data:
memory records (through ``UserMemoryStats``, one row per user with records, kept by
triggers), sessions, artifacts, or ``user:``/``app:`` state. History alone (eviction
events, retired-session tombstones, daily counters) does not make an app known: every
app that ever stored a record got its policy then, and that row stays.

Agents create apps implicitly, by writing; staff name an existing app (an erasure, a
run limited to one app, a policy change) or create its policy explicitly
(``records.staff.create_policy``). A name that is not known is refused with the list
of known apps, so a typo cannot look like success.
"""

from __future__ import annotations

from ..models import AgentSession, AppState, Artifact, Policy, UserMemoryStats, UserState

# Models whose rows belong to an app; each has an index (or uniqueness) led by app_name.
APP_DATA = (UserMemoryStats, AgentSession, Artifact, UserState, AppState)
LISTED_IN_MESSAGES = 20


class UnknownApp(ValueError):
    """An app name memadmin has never seen: no policy and no data."""

    def __init__(self, app_name: str, known: list[str] | None = None):
        self.app_name = app_name
        self.known = known_apps() if known is None else known
        super().__init__(unknown_app_message(app_name, self.known))


def known_apps() -> list[str]:
    """Every known app, sorted. One query per model; apps are few."""
    apps = set(Policy.objects.values_list("app_name", flat=True))
    for model in APP_DATA:
        apps.update(model.objects.order_by().values_list("app_name", flat=True).distinct())
    return sorted(apps)


def is_known_app(app_name: str) -> bool:
    if not isinstance(app_name, str) or not app_name:
        return False
    if Policy.objects.filter(app_name=app_name).exists():
        return True
    return any(m.objects.filter(app_name=app_name).exists() for m in APP_DATA)


def check_known_app(app_name: str) -> None:
    """Raise UnknownApp (a ValueError) unless ``app_name`` is known."""
    if not is_known_app(app_name):
        raise UnknownApp(app_name)


def unknown_app_message(app_name: str, known: list[str]) -> str:
    if not known:
        listed = "memadmin knows no app yet"
    elif len(known) > LISTED_IN_MESSAGES:
        more = len(known) - LISTED_IN_MESSAGES
        listed = f"known apps: {', '.join(known[:LISTED_IN_MESSAGES])} and {more} more"
    else:
        listed = f"known apps: {', '.join(known)}"
    return (
        f"No app named {app_name!r}: memadmin has no policy and no data for it ({listed}). "
        "Check the spelling; a new app's policy is created on the Policies page or with "
        "manage.py policy create."
    )

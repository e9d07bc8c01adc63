"""Policies: the current one per app and each app's version history with diffs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.paginator import Page, Paginator

from ..models import POLICY_FIELDS, Policy, PolicyVersion


def policy_rows() -> list[Policy]:
    return list(Policy.objects.select_related("updated_by").order_by("app_name"))


@dataclass(frozen=True)
class VersionChange:
    version: int
    created_at: datetime
    created_by: str
    note: str
    values: dict
    # (field, previous value, this version's value); empty for the first version.
    changes: list[tuple[str, object, object]]


def _diff(previous: dict | None, values: dict) -> list[tuple[str, object, object]]:
    if previous is None:
        return []
    return [
        (f, previous.get(f), values.get(f))
        for f in POLICY_FIELDS
        if previous.get(f) != values.get(f)
    ]


def policy_history(app_name: str, *, page: int | str = 1, per_page: int = 20) -> Page:
    """Versions newest first, each with its diff to the version before. Three queries."""
    qs = (
        PolicyVersion.objects.filter(app_name=app_name)
        .select_related("created_by")
        .order_by("-version")
    )
    page_obj = Paginator(qs, per_page).get_page(page)
    versions = list(page_obj.object_list)
    older = None
    if versions:
        older = (
            PolicyVersion.objects.filter(app_name=app_name, version__lt=versions[-1].version)
            .order_by("-version")
            .values_list("values", flat=True)
            .first()
        )
    # No versions yet (an app with data but no policy row): an empty history.
    previous_of = [v.values for v in versions[1:]] + [older] if versions else []
    page_obj.object_list = [
        VersionChange(
            version=v.version,
            created_at=v.created_at,
            created_by=v.created_by.get_username() if v.created_by else "",
            note=v.note,
            values=v.values,
            changes=_diff(prev, v.values),
        )
        for v, prev in zip(versions, previous_of, strict=True)
    ]
    return page_obj


@dataclass(frozen=True)
class PolicyChange:
    """One saved change of an app's policy, for marking time axes."""

    version: int
    at: datetime
    # (field, before, after), as in the history
    changes: list[tuple[str, object, object]]


def policy_changes(app_name: str, since: datetime) -> list[PolicyChange]:
    """The versions saved since ``since``, oldest first, each with its diff. The first
    version (the defaults, when the app got a policy) is a start, not a change. Two
    queries."""
    versions = list(
        PolicyVersion.objects.filter(app_name=app_name, created_at__gte=since, version__gt=1)
        .order_by("version")
        .values_list("version", "created_at", "values")
    )
    if not versions:
        return []
    older = (
        PolicyVersion.objects.filter(app_name=app_name, version__lt=versions[0][0])
        .order_by("-version")
        .values_list("values", flat=True)
        .first()
    )
    previous_of = [older] + [values for _, _, values in versions[:-1]]
    return [
        PolicyChange(version=v, at=at, changes=_diff(prev, values) if prev else [])
        for (v, at, values), prev in zip(versions, previous_of, strict=True)
    ]

"""Reading and changing per-app policies. Every change is kept as a PolicyVersion."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from . import policy as pure
from .models import POLICY_FIELDS, Policy, PolicyVersion
from .policy import limit_problems


def policy_for(app_name: str) -> Policy:
    """The app's current policy, created with the article's defaults on first use.

    Agents create their app by writing to it, so the first write (or search) makes the
    policy; staff create one explicitly with ``records.staff.create_policy``, and
    commands and forms that name an app refuse one that is not known first
    (``records.selectors.apps``).
    """
    policy = Policy.objects.filter(app_name=app_name).first()
    if policy is not None:
        return policy
    try:
        return create_policy_row(app_name)
    except IntegrityError:  # another process created it first
        return Policy.objects.get(app_name=app_name)


def create_policy_row(app_name: str, *, by=None, note: str = "defaults") -> Policy:
    """The app's first policy, with the defaults, and its version 1. IntegrityError if the
    app has one already."""
    with transaction.atomic():
        policy = Policy.objects.create(app_name=app_name, updated_by=by)
        _keep_version(policy, by, note)
        return policy


def _keep_version(policy: Policy, by, note: str) -> None:
    PolicyVersion.objects.create(
        app_name=policy.app_name,
        version=policy.version,
        values=policy.snapshot(),
        created_by=by,
        note=note,
    )


def update_policy(app_name: str, changes: dict, *, by=None, note: str = "") -> Policy:
    """Apply ``changes``, validate them, bump the version and keep a copy of it.

    Raises django.core.exceptions.ValidationError (nothing saved) on bad values.
    """
    unknown = set(changes) - set(POLICY_FIELDS)
    if unknown:
        raise ValidationError(f"Unknown policy field(s): {', '.join(sorted(unknown))}.")
    too_large = limit_problems(changes)
    if too_large:  # the forms' sentences, before the database's integer range speaks
        raise ValidationError({field: [problem] for field, problem in too_large.items()})
    policy_for(app_name)
    with transaction.atomic():
        policy = Policy.objects.select_for_update().get(app_name=app_name)
        for field, value in changes.items():
            setattr(policy, field, value)
        # Types first ("abc" is no number; a field error), so clean() compares numbers.
        policy.clean_fields()
        policy.full_clean()
        policy.version += 1
        policy.updated_by = by
        policy.save()
        _keep_version(policy, by, note)
    return policy


def policy_or_default(app_name: str) -> pure.PolicyParams:
    """The app's policy values, or the defaults if it has none yet (nothing is created:
    pages and counts read this; writes go through ``policy_for``)."""
    policy = Policy.objects.filter(app_name=app_name).first()
    return pure.PolicyParams() if policy is None else policy.params()

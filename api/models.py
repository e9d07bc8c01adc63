"""API keys: per-app bearer tokens for agents in other processes."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from records.models import APP_NAME_MAX


class ApiKey(models.Model):
    """A key that lets its holder use the HTTP API for one app, and only that app.

    Only a SHA-256 hash of the token is stored; the token is shown once, at creation.
    ``prefix`` is the token's non-secret beginning, so people can tell keys apart.
    """

    app_name = models.CharField(max_length=APP_NAME_MAX)
    name = models.CharField(max_length=100, help_text="What the key is for, e.g. 'web agent'.")
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Updated at most once a minute (see api.keys.LAST_USED_RESOLUTION).
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["app_name", "-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(app_name="") & ~Q(name="") & ~Q(prefix=""),
                name="api_key_fields_not_empty",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.app_name}: {self.name})"

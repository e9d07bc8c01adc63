"""A login is a password check: remember when, for the erasure pages' re-authentication."""

from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver

from .reauth import mark_password_checked


@receiver(user_logged_in, dispatch_uid="erasure-password-checked-at-login")
def _password_checked_at_login(sender, request, user, **kwargs):
    if request is not None and hasattr(request, "session"):
        mark_password_checked(request)

"""Failed logins keep no request data.

django-axes stores each failed login's query string and form (``AccessAttempt.get_data``
and ``post_data``), masking only the password and the fields named in
``AXES_SENSITIVE_PARAMETERS``. The erasure form asks for the password with its other
fields, so a wrong password would keep the subject's user id, ticket and reason there
(a table the erasure inventory rightly counts as staff data), and a login's ``next``
names the page asked for, a user's among them. A list of fields to mask would leak the
next field added; so nothing of the request is kept. The attempt keeps what the lockout
needs: username, address, browser, path and counts.
"""

from axes.models import AccessAttempt
from django.db.models.signals import pre_save
from django.dispatch import receiver


@receiver(pre_save, sender=AccessAttempt, dispatch_uid="memadmin-attempt-without-request-data")
def _without_request_data(sender, instance: AccessAttempt, **kwargs) -> None:
    # A repeated failure appends with Concat expressions; these replace them too.
    instance.get_data = ""
    instance.post_data = ""

"""Read-only admin views: requests and their audit log are compliance records."""

from django.contrib import admin
from django.db.models.constants import LOOKUP_SEP

from memadmin import admin as memadmin_admin

from .models import ErasureAuditEntry, ErasureBarrier, ErasureRequest

# Fields that name an erasure's subject: no admin list may filter on them.
SUBJECT_FIELDS = frozenset({"user_id", "subject_hash"})


class ReadOnlyAdmin(memadmin_admin.ReadOnlyAdmin):
    def lookup_allowed(self, lookup, value, request):
        # Django allows any lookup on a model's own fields, shown or not:
        # ?user_id__startswith=b would recover an open request's subject letter by letter.
        # Refused (400) through any relation too, e.g. ?request__user_id=...
        if SUBJECT_FIELDS & set(lookup.split(LOOKUP_SEP)):
            return False
        return super().lookup_allowed(lookup, value, request)


@admin.register(ErasureRequest)
class ErasureRequestAdmin(ReadOnlyAdmin):
    list_display = ("id", "app_name", "status", "ticket", "requested_by_name", "submitted_at")
    list_filter = ("status",)
    # The user id is deliberately not listed, shown, searchable or filterable here.
    exclude = ("user_id",)


@admin.register(ErasureAuditEntry)
class ErasureAuditEntryAdmin(ReadOnlyAdmin):
    list_display = ("request", "at", "action", "from_status", "to_status", "actor")
    list_filter = ("action",)


@admin.register(ErasureBarrier)
class ErasureBarrierAdmin(ReadOnlyAdmin):
    list_display = ("request", "app_name", "raised_at")

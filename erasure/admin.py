"""Read-only admin views: requests and their audit log are compliance records."""

from django.contrib import admin

from .models import ErasureAuditEntry, ErasureBarrier, ErasureRequest


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ErasureRequest)
class ErasureRequestAdmin(ReadOnlyAdmin):
    list_display = ("id", "app_name", "status", "ticket", "requested_by_name", "submitted_at")
    list_filter = ("status",)
    # The user id is deliberately not listed or searchable here.
    exclude = ("user_id",)


@admin.register(ErasureAuditEntry)
class ErasureAuditEntryAdmin(ReadOnlyAdmin):
    list_display = ("request", "at", "action", "from_status", "to_status", "actor")
    list_filter = ("action",)


@admin.register(ErasureBarrier)
class ErasureBarrierAdmin(ReadOnlyAdmin):
    list_display = ("request", "app_name", "raised_at")

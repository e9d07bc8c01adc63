from django.contrib import admin

from .models import AuditEntry


class ReadOnlyAdmin(admin.ModelAdmin):
    """Every app's admin views are read-only: the services write, never the admin."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    """Read-only: the log is append-only, and only the services append to it."""

    list_display = ("created_at", "actor_username", "action", "app_name", "user_id", "target")
    list_filter = ("action", "app_name")
    search_fields = ("actor_username", "user_id", "target")
    date_hierarchy = "created_at"

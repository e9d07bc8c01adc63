"""The Django admin for superusers: browse everything, change nothing here.

Changes to memory (pins, importance, policies) go through the dashboard, which takes the
user's lock and writes the audit log; an admin edit would do neither.
"""

from django.contrib import admin

from memadmin.admin import ReadOnlyAdmin

from .models import (
    AgentSession,
    Artifact,
    EvictionEvent,
    MemoryRecord,
    Policy,
    PolicyVersion,
    RetiredSession,
)


@admin.register(MemoryRecord)
class MemoryRecordAdmin(ReadOnlyAdmin):
    list_display = ("id", "app_name", "user_id", "importance", "pinned", "tokens", "created_at")
    list_filter = ("app_name", "pinned", "importance_source")
    search_fields = ("user_id", "source_session_id")
    # content is shown on the detail page only; lists stay free of user text
    show_full_result_count = False


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdmin):
    list_display = ("session_id", "app_name", "user_id", "event_count", "created_at")
    list_filter = ("app_name",)
    search_fields = ("user_id", "session_id")
    show_full_result_count = False


@admin.register(Artifact)
class ArtifactAdmin(ReadOnlyAdmin):
    list_display = ("filename", "version", "app_name", "user_id", "session_id", "mime_type")
    list_filter = ("app_name",)
    search_fields = ("user_id", "session_id", "filename")
    exclude = ("data",)


@admin.register(Policy)
class PolicyAdmin(ReadOnlyAdmin):
    list_display = ("app_name", "version", "max_records", "max_tokens", "ttl_days", "updated_at")


@admin.register(PolicyVersion)
class PolicyVersionAdmin(ReadOnlyAdmin):
    list_display = ("app_name", "version", "created_at", "created_by", "note")
    list_filter = ("app_name",)


@admin.register(EvictionEvent)
class EvictionEventAdmin(ReadOnlyAdmin):
    list_display = ("record_id", "app_name", "user_id", "reason", "score", "evicted_at")
    list_filter = ("reason", "app_name")
    search_fields = ("user_id",)
    date_hierarchy = "evicted_at"
    show_full_result_count = False


@admin.register(RetiredSession)
class RetiredSessionAdmin(ReadOnlyAdmin):
    list_display = ("session_id", "app_name", "user_id", "event_count", "retired_at")
    list_filter = ("app_name",)
    search_fields = ("user_id", "session_id")

"""The memory domain's tables, by sub-domain: records and evictions (``memory``), ADK
sessions and artifacts (``sessions``), per-app configuration (``policies``) and quality
signals (``feedback``). Everything is importable from ``records.models``."""

from .access import EvictedRecord, SearchLog
from .embeddings import RecordEmbedding
from .feedback import Correction, DailyCounter, RegretTerm
from .limits import APP_NAME_MAX, SESSION_ID_MAX, USER_ID_MAX
from .memory import (
    POLICY_RECORD_FIELDS,
    EvictionEvent,
    EvictionReason,
    ImportanceSource,
    MemoryRecord,
    MemoryRecordManager,
    UserMemoryStats,
)
from .policies import (
    DEFAULTS,
    POLICY_FIELDS,
    ConfigGeneration,
    ImportanceRule,
    Policy,
    PolicyVersion,
    preset_values,
)
from .sessions import AgentSession, AppState, Artifact, RetiredSession, SessionEvent, UserState

__all__ = [
    "APP_NAME_MAX",
    "DEFAULTS",
    "POLICY_FIELDS",
    "POLICY_RECORD_FIELDS",
    "SESSION_ID_MAX",
    "USER_ID_MAX",
    "AgentSession",
    "AppState",
    "Artifact",
    "ConfigGeneration",
    "Correction",
    "DailyCounter",
    "EvictedRecord",
    "EvictionEvent",
    "EvictionReason",
    "ImportanceRule",
    "ImportanceSource",
    "MemoryRecord",
    "MemoryRecordManager",
    "Policy",
    "RecordEmbedding",
    "PolicyVersion",
    "RegretTerm",
    "RetiredSession",
    "SearchLog",
    "SessionEvent",
    "UserMemoryStats",
    "UserState",
    "preset_values",
]

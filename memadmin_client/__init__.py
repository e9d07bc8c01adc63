"""Remote ADK services for agents that run outside memadmin's process.

    from memadmin_client import RemoteMemoryService, RemoteSessionService

    runner = Runner(
        app_name="pharmacy-support",
        agent=agent,
        session_service=RemoteSessionService(base_url, api_key),
        memory_service=RemoteMemoryService(base_url, api_key),
        artifact_service=RemoteArtifactService(base_url, api_key),
    )

Needs only google-adk and httpx (and cryptography, to verify erasure receipts offline:
``verify_receipt``): no Django, no memadmin settings.
"""

from .artifacts import RemoteArtifactService
from .errors import (
    InvalidRequest,
    MemadminError,
    MemadminUnavailable,
    NotAuthorized,
    ServerError,
)
from .http import MemadminClient
from .memory import RemoteMemoryService
from .receipts import ReceiptNotValid, verify_receipt
from .sessions import RemoteSessionService
from .version import __version__ as __version__

__all__ = [
    "InvalidRequest",
    "MemadminClient",
    "MemadminError",
    "MemadminUnavailable",
    "NotAuthorized",
    "ReceiptNotValid",
    "RemoteArtifactService",
    "RemoteMemoryService",
    "RemoteSessionService",
    "ServerError",
    "verify_receipt",
]

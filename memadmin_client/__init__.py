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

__version__ = "0.1.0"

from .artifacts import RemoteArtifactService  # noqa: E402
from .errors import (  # noqa: E402
    InvalidRequest,
    MemadminError,
    MemadminUnavailable,
    NotAuthorized,
    ServerError,
)
from .http import MemadminClient  # noqa: E402
from .memory import RemoteMemoryService  # noqa: E402
from .receipts import ReceiptNotValid, verify_receipt  # noqa: E402
from .sessions import RemoteSessionService  # noqa: E402

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

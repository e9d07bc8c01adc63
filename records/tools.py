"""ADK function tools an agent can be given.

    LlmAgent(..., tools=[report_forgotten_tool])

When the user says they already told the agent something it did not remember, the
model calls ``report_forgotten``; memadmin counts it as a correction (the
"forgot-something rate") and checks whether it matches a recently evicted record.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.utils import timezone
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext

from .feedback import report_correction


async def report_forgotten(about: str, tool_context: ToolContext) -> dict:
    """Report that the user had to repeat something you should have remembered.

    Call this when the user says things like "I told you before" or "as I said last
    time". Args: about: a few words on what was forgotten (e.g. "penicillin allergy").
    """
    session = tool_context.session
    correction = await sync_to_async(report_correction)(
        session.app_name,
        session.user_id,
        timezone.now(),
        session_id=session.id,
        about=about or "",
    )
    return {"recorded": True, "matched_recent_eviction": correction.matched_eviction}


report_forgotten_tool = FunctionTool(func=report_forgotten)

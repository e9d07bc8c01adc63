"""A scripted model for end-to-end ADK tests: canned responses, no network, no API key."""

from collections.abc import AsyncGenerator

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field


def say(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


def call(name: str, **args) -> types.Content:
    return types.Content(
        role="model", parts=[types.Part(function_call=types.FunctionCall(name=name, args=args))]
    )


class ScriptedLlm(BaseLlm):
    """Answers each model turn with the next scripted Content and keeps every request."""

    model: str = "scripted"
    script: list[types.Content] = Field(default_factory=list)
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        if not self.script:
            raise AssertionError("the scripted model ran out of responses")
        yield LlmResponse(content=self.script.pop(0))

    def request_text(self, index: int = -1) -> str:
        """Everything the model was shown in one request: instructions and contents."""
        request = self.requests[index]
        parts = [str(request.config.system_instruction or "")]
        for content in request.contents:
            for part in content.parts or []:
                parts.append(part.text or "")
                if part.function_response:
                    parts.append(str(part.function_response.response))
        return "\n".join(parts)

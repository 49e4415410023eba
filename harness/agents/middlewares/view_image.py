"""Show images the model asked for with ``view_image``, then drop the pixels.

The tool puts base64 data in ``viewed_images``. Before the next model call this adds a
hidden user message with the images to the request only (never to the stored
conversation); the same model step clears ``viewed_images`` so later checkpoints do not
carry the payload. A model without vision gets a note instead of data it cannot read.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse
from langgraph.types import Command

from harness.agents.markers import context_block, hidden_message, neutralize_tags


class ViewImageMiddleware(AgentMiddleware):
    def __init__(self, supports_vision: bool) -> None:
        super().__init__()
        self.supports_vision = supports_vision

    def _inject(self, request: Any) -> Any:
        images = (request.state or {}).get("viewed_images") or {}
        if not images:
            return request
        paths = ", ".join(neutralize_tags(p) for p in images)
        if not self.supports_vision:
            note = context_block("images", f"The images {paths} cannot be shown: this model has no vision support. Tell the user if it matters.")
            return request.override(messages=[*request.messages, hidden_message("images", note)])
        blocks: list[dict[str, Any]] = [{"type": "text", "text": context_block("images", f"Here are the images you asked to view: {paths}")}]
        for path, data in images.items():
            blocks.append({"type": "text", "text": f"Image {neutralize_tags(path)}:"})
            blocks.append({"type": "image_url", "image_url": {"url": f"data:{data.get('mime_type', 'image/png')};base64,{data.get('base64', '')}"}})
        return request.override(messages=[*request.messages, hidden_message("images", "", content=blocks)])

    @staticmethod
    def _clear(request: Any, result: Any) -> Any:
        if not (request.state or {}).get("viewed_images"):
            return result
        return ExtendedModelResponse(model_response=result, command=Command(update={"viewed_images": {}}))

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._clear(request, handler(self._inject(request)))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._clear(request, await handler(self._inject(request)))

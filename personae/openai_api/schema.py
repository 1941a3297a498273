"""The request body of ``POST /v1/chat/completions`` as this server reads it (pydantic).

Only what a character's turn uses is read: the model, the messages, ``stream`` and
``stream_options.include_usage``. Sampling fields (``temperature``, ``max_tokens``, ...) are
accepted and not applied: the model behind the server is the configured one, with the
configured sampling (the settings rule of every command), whatever the app sends.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from personae.openai_api.errors import APIError

Role = Literal["system", "developer", "user", "assistant", "tool", "function"]


class ContentPart(BaseModel):
    """One part of a message's content list; only ``text`` parts can reach a character."""

    model_config = ConfigDict(extra="allow")

    type: str
    """``text`` (others, such as ``image_url``, are refused)."""
    text: str | None = None
    """The text of a ``text`` part."""


class ChatMessage(BaseModel):
    """One message of the conversation the client sends."""

    model_config = ConfigDict(extra="allow")

    role: Role
    """Who wrote it: the user, the character (assistant), or the app's instructions."""
    content: str | list[ContentPart] | None = None
    """Text, or a list of parts (text only)."""


class StreamOptions(BaseModel):
    """``stream_options``: whether the stream ends with a usage chunk."""

    model_config = ConfigDict(extra="allow")

    include_usage: bool = False
    """Send a last chunk with ``usage`` and no choices before ``[DONE]``."""


class ChatCompletionRequest(BaseModel):
    """``POST /v1/chat/completions``: which character, and the whole conversation so far."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    """A persona's name, or ``novel/character@chapter``."""
    messages: list[ChatMessage] = Field(min_length=1)
    """The conversation, oldest first; the last is the user's message to answer."""
    stream: bool = False
    """Answer as server-sent events (``chat.completion.chunk``) ending in ``[DONE]``."""
    stream_options: StreamOptions | None = None
    """Streaming options (``include_usage``)."""
    n: int = 1
    """Answers wanted; a character gives one."""


def parse_request(body: object) -> ChatCompletionRequest:
    """The request, or a 400 naming the first field that is wrong."""
    if not isinstance(body, dict):
        raise APIError(400, "the request body must be a JSON object with model and messages")
    try:
        request = ChatCompletionRequest.model_validate(body)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise APIError(400, f"{where}: {first['msg']}", param=where) from None
    if request.n != 1:
        raise APIError(400, f"n={request.n}: a character gives one answer; send n=1", param="n")
    return request


def text_of(message: ChatMessage) -> str:
    """A message's text (its text parts joined); a non-text part is a 400."""
    if message.content is None:
        return ""
    if isinstance(message.content, str):
        return message.content
    texts = []
    for part in message.content:
        if part.type != "text":
            raise APIError(
                400,
                f"a {part.type!r} content part cannot reach a character: send text only",
                param="messages",
            )
        texts.append(part.text or "")
    return "\n".join(texts)

"""``POST /v1/chat/completions``: a character's answer as a ``chat.completion`` or a stream.

Everything that can be refused is checked before the answer begins (the body, the model, the
conversation), so it gets its status. A stream starts only once the turn has produced its
first piece: a model server that is down is a 502 with OpenAI's error body, as a plain
request's is, not a stream that breaks after its first chunk.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from personae.errors import PersonaeError
from personae.openai_api.conversation import read_conversation
from personae.openai_api.errors import APIError, from_personae_error
from personae.openai_api.models import resolve_model
from personae.openai_api.options import OpenAIServerOptions
from personae.openai_api.schema import parse_request
from personae.openai_api.sse import DONE, ChunkFrame, event
from personae.openai_api.turns import TurnDone, TurnPiece, character_turn

log = logging.getLogger(__name__)

MAX_BODY = 1_000_000
"""Bytes a request may have (as the MCP server's cap): a long role-play is far below it."""


async def chat_completions(request: Request) -> Response:
    """Answer the conversation's last user message in character."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        message = f"the body is {len(raw):,} bytes; a conversation may have up to {MAX_BODY:,}"
        return APIError(413, message, code="request_too_large").response()
    try:
        body = json.loads(raw)
    except ValueError:
        return APIError(400, "the body is not valid JSON").response()
    try:
        asked = parse_request(body)
        options: OpenAIServerOptions = request.app.state.options
        target = await asyncio.to_thread(
            resolve_model, asked.model, options.personas_dir, options.data_dir
        )
        conversation = read_conversation(asked.messages)
        pieces = character_turn(
            target, conversation, request.app.state.contexts, stream=asked.stream
        )
        first = await _next(pieces)
    except APIError as error:
        return error.response()
    frame = ChunkFrame(
        id=f"chatcmpl-{uuid.uuid4().hex}",
        model=asked.model,
        created=int(time.time()),
        include_usage=bool(asked.stream_options and asked.stream_options.include_usage),
    )
    if not asked.stream:
        try:
            done = first if isinstance(first, TurnDone) else await _last(pieces)
        except APIError as error:
            return error.response()
        finally:
            await pieces.aclose()  # leave the turn's chat now, not when it is collected
        return JSONResponse(_completion(frame, done))
    return StreamingResponse(
        _stream(frame, first, pieces),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _next(pieces: AsyncGenerator[TurnPiece, None]) -> TurnPiece:
    """The turn's next piece; a runner's error as OpenAI reports it."""
    try:
        return await anext(pieces)
    except PersonaeError as error:
        raise from_personae_error(error) from None
    except StopAsyncIteration:
        raise APIError(500, "the turn ended without an answer", type="server_error") from None
    except Exception:
        log.exception("a turn failed")
        raise APIError(500, "the turn failed; see the server's log", type="server_error") from None


async def _last(pieces: AsyncGenerator[TurnPiece, None]) -> TurnDone:
    while True:
        piece = await _next(pieces)
        if isinstance(piece, TurnDone):
            return piece


def _usage(done: TurnDone) -> dict[str, int]:
    total = done.prompt_tokens + done.completion_tokens
    return {
        "prompt_tokens": done.prompt_tokens,
        "completion_tokens": done.completion_tokens,
        "total_tokens": total,
    }


def _completion(frame: ChunkFrame, done: TurnDone) -> dict[str, Any]:
    message = {"role": "assistant", "content": done.text, "refusal": None}
    return {
        "id": frame.id,
        "object": "chat.completion",
        "created": frame.created,
        "model": frame.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": _usage(done),
    }


async def _stream(
    frame: ChunkFrame, first: TurnPiece, pieces: AsyncGenerator[TurnPiece, None]
) -> AsyncIterator[bytes]:
    yield frame.chunk({"role": "assistant", "content": ""})
    piece = first
    try:
        while not isinstance(piece, TurnDone):
            yield frame.chunk({"content": piece})
            piece = await _next(pieces)
    except APIError as error:
        yield event(error.body())
        return
    finally:
        await pieces.aclose()  # also when the client hung up mid-answer
    yield frame.chunk({}, "stop")
    if frame.include_usage:
        yield frame.usage_chunk(_usage(piece))
    yield DONE

"""The chat server: one Starlette application answering OpenAI's chat API over the characters."""

from __future__ import annotations

import asyncio
import time

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from personae.openai_api.completions import chat_completions
from personae.openai_api.errors import APIError
from personae.openai_api.models import CharacterModel, all_models, resolve_model
from personae.openai_api.options import OpenAIServerOptions
from personae.openai_api.security import APIGuardMiddleware
from personae.openai_api.turns import TurnContexts
from personae.web.security import LOOPBACK_NAMES

OWNER = "personae"
"""``owned_by`` of every model."""


def _model_object(model: CharacterModel, created: int) -> dict[str, object]:
    return {"id": model.id, "object": "model", "created": created, "owned_by": OWNER}


async def list_models(request: Request) -> Response:
    """``GET /v1/models``: every persona, then every ARCANE character at each chapter."""
    options: OpenAIServerOptions = request.app.state.options
    models = await asyncio.to_thread(all_models, options.personas_dir, options.data_dir)
    created = request.app.state.started
    data = [_model_object(model, created) for model in models]
    return JSONResponse({"object": "list", "data": data})


async def retrieve_model(request: Request) -> Response:
    """``GET /v1/models/{model}``: one model, or a 404 in OpenAI's shape."""
    options: OpenAIServerOptions = request.app.state.options
    try:
        model = await asyncio.to_thread(
            resolve_model, request.path_params["model"], options.personas_dir, options.data_dir
        )
    except APIError as error:
        return error.response()
    return JSONResponse(_model_object(model, request.app.state.started))


async def http_error(request: Request, error: Exception) -> Response:
    """An unknown route (404) or method (405) in OpenAI's shape."""
    assert isinstance(error, HTTPException)
    where = f"{request.method} {request.url.path}"
    if error.status_code == 405:
        message, code = f"Method not allowed ({where})", "method_not_allowed"
    elif error.status_code == 404:
        message, code = f"Invalid URL ({where})", "unknown_url"
    else:
        message, code = str(error.detail), None
    return APIError(error.status_code, message, code=code).response()


async def server_error(request: Request, error: Exception) -> Response:
    """Anything unforeseen: a 500 in OpenAI's shape (the traceback goes to the log only)."""
    return APIError(500, "the server failed; see its log", type="server_error").response()


ROUTES = [
    Route("/v1/models", list_models, methods=["GET"]),
    Route("/v1/models/{model:path}", retrieve_model, methods=["GET"]),
    Route("/v1/chat/completions", chat_completions, methods=["POST"]),
]


def create_app(
    options: OpenAIServerOptions,
    *,
    token: str | None = None,
    allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES,
) -> Starlette:
    """The server over ``options``'s folders, its run settings read once, here.

    ``allowed_hosts`` are the names a request's ``Host`` may carry (loopback names by
    default); ``token``, when set, is the API key every request must send.
    """
    app = Starlette(
        routes=ROUTES,
        middleware=[Middleware(APIGuardMiddleware, allowed_hosts=allowed_hosts, token=token)],
        exception_handlers={HTTPException: http_error, Exception: server_error},
    )
    app.state.options = options.resolved()
    app.state.contexts = TurnContexts(
        app.state.options.amadeus_context(), app.state.options.roleplay_context()
    )
    app.state.started = int(time.time())
    return app

"""OpenAI's error shape: ``{"error": {"message", "type", "param", "code"}}`` with its status.

Clients (the ``openai`` SDK, LangChain, chat apps) read ``error.message`` to show the user and
map the status to their exception classes (404 ``NotFoundError``, 401 ``AuthenticationError``),
so every refusal of this server, a route's as well as a turn's, comes in this shape, never as a
traceback or plain text.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from personae.errors import InputError, PersonaeError, RemoteError


class APIError(Exception):
    """A request refused or failed, as OpenAI's API reports it."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",  # noqa: A002 (OpenAI's field name)
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param

    def body(self) -> dict[str, Any]:
        """The JSON body (also the payload of an error event in a stream)."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def response(self) -> JSONResponse:
        """The HTTP answer."""
        return JSONResponse(self.body(), status_code=self.status)


def model_not_found(model: str, hint: str) -> APIError:
    """404 for a model id that is neither a persona nor an ARCANE character at a chapter."""
    return APIError(
        404,
        f"The model {model!r} does not exist: {hint}",
        code="model_not_found",
        param="model",
    )


def from_personae_error(error: PersonaeError) -> APIError:
    """A runner's one-line error in OpenAI's shape: the model server's failures are 502."""
    if isinstance(error, RemoteError):
        return APIError(502, str(error), type="api_error", code="model_endpoint_failed")
    if isinstance(error, InputError):
        return APIError(400, str(error))
    return APIError(500, str(error), type="server_error", code="configuration_error")

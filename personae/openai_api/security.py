"""Who may use the chat server: loopback by default, its token otherwise, the Host checked.

Each answer costs model calls, so the server answers only requests meant for it, as the web
page does (:mod:`personae.web.security`: the same loopback rule and bind check). The token
travels as OpenAI's API key does, ``Authorization: Bearer <token>`` (what an app's "API key"
field sends), and is compared in constant time as bytes, so a token with any characters works
and a wrong one is a 401, never a 500. A page elsewhere cannot use a visitor's browser against
the server: a DNS-rebound name is refused by the Host check, and a cross-site form cannot send
``application/json`` without a CORS preflight, which this server never grants.
"""

from __future__ import annotations

import hmac

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from personae.openai_api.errors import APIError

JSON_TYPE = "application/json"


class APIGuardMiddleware:
    """Checks ``Host``, the bearer token when one is set, and that a POST is JSON."""

    def __init__(self, app: ASGIApp, *, allowed_hosts: tuple[str, ...], token: str | None) -> None:
        self.app = app
        self.allowed_hosts = tuple(name.lower() for name in allowed_hosts)
        self.token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a refused request here in OpenAI's error shape; pass the others on."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(HTTPConnection(scope))
        if refusal is not None:
            await refusal.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, connection: HTTPConnection) -> APIError | None:
        host = connection.headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name.lower() not in self.allowed_hosts:
            return APIError(
                421,
                f"this server does not answer to Host {host!r}; use the address it printed",
                code="misdirected_request",
            )
        if self.token is not None:
            header = connection.headers.get("authorization", "")
            scheme, _, given = header.partition(" ")
            # Headers arrive decoded as latin-1: encoding back gives the bytes that were sent.
            sent = given.strip().encode("latin-1") if scheme.lower() == "bearer" else b""
            if not hmac.compare_digest(sent, self.token):
                return APIError(
                    401,
                    "Incorrect API key provided: send the server's --token as the API key "
                    "(Authorization: Bearer TOKEN)",
                    code="invalid_api_key",
                )
        if connection.scope.get("method") == "POST":
            kind = connection.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind != JSON_TYPE:
                return APIError(
                    415,
                    f"the body must be JSON (Content-Type: {JSON_TYPE}), not {kind or 'none'!r}",
                )
        return None

"""Who may use the page: loopback by default, a token otherwise, the Host header checked.

The page runs jobs that cost model calls and reads the user's folders, so it answers only
requests meant for it. A browser on the same machine reaches it at ``127.0.0.1`` or
``localhost``; a page elsewhere that points a DNS name at 127.0.0.1 (DNS rebinding) sends its
own name in ``Host``, which is refused. On another ``--host`` every request needs the token:
``?token=...`` once (it is then kept in an HttpOnly cookie) or ``Authorization: Bearer ...``.
"""

from __future__ import annotations

import hmac
import ipaddress
from pathlib import Path
from urllib.parse import urlsplit

from starlette.datastructures import URL
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from personae.errors import InputError

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
TOKEN_COOKIE = "personae_web_token"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token (bad input, exit 2)."""
    if not is_loopback(host) and not token:
        raise InputError(
            f"--host {host} lets other machines reach the page, which runs paid jobs",
            "also pass --token SECRET (or set PERSONAE_WEB_TOKEN), or keep the default 127.0.0.1",
        )


class GuardMiddleware:
    """Checks ``Host`` against the names the server answers to, then the token if one is set."""

    def __init__(self, app: ASGIApp, *, allowed_hosts: tuple[str, ...], token: str | None) -> None:
        self.app = app
        self.allowed_hosts = tuple(name.lower() for name in allowed_hosts)
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a refused request here; pass the others to the app."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        response = self._refusal(connection)
        if response is not None:
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, connection: HTTPConnection) -> Response | None:
        host = connection.headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name.lower() not in self.allowed_hosts:
            return PlainTextResponse(
                f"refused: this server does not answer to Host {host!r}", status_code=421
            )
        if cross_site(connection):
            return PlainTextResponse(
                "refused: a form of another site may not post here (its Origin is not this "
                "server); use the page itself",
                status_code=403,
            )
        if self.token is None:
            return None
        given = connection.query_params.get("token")
        if given is not None and hmac.compare_digest(given, self.token):
            url = URL(scope=connection.scope).remove_query_params("token")
            response = RedirectResponse(str(url.replace(scheme="", netloc="")), status_code=303)
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
            return response
        bearer = connection.headers.get("authorization", "").removeprefix("Bearer ")
        cookie = connection.cookies.get(TOKEN_COOKIE, "")
        if any(hmac.compare_digest(value, self.token) for value in (bearer, cookie) if value):
            return None
        return PlainTextResponse(
            "refused: this page needs its token (open the URL the server printed)", status_code=401
        )


SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def cross_site(connection: HTTPConnection) -> bool:
    """Whether a state-changing request comes from another site's page.

    The Host check stops rebinding, not a form on any page the user visits that posts to
    ``http://127.0.0.1:8765/...``: its request carries this server's Host, but the browser
    adds the page's ``Origin`` (and ``Sec-Fetch-Site: cross-site``) to every POST. Without
    ``Origin`` (curl, a script) the request did not come from a page.
    """
    if connection.scope.get("method", "GET") in SAFE_METHODS:
        return False
    if connection.headers.get("sec-fetch-site") == "cross-site":
        return True
    origin = connection.headers.get("origin")
    if origin is None:
        return False
    return urlsplit(origin).netloc.lower() != connection.headers.get("host", "").lower()


def inside(path: Path, folders: tuple[Path, ...]) -> bool:
    """Whether ``path`` (resolved, links followed) lies in one of ``folders``."""
    real = path.resolve()
    return any(real == folder or real.is_relative_to(folder) for folder in folders)

"""The process's one TLS client context, shared by every HTTP client Personae builds.

Why: building a context loads the whole CA bundle (certifi's, or ``SSL_CERT_FILE`` as httpx
reads it), 25-55 ms of CPU, and httpx builds one per client and per transport: two per web
client (about a third of a profile's CPU) and two per ``ChatOpenAI`` (the OpenAI SDK's async
and sync clients). A context is safe to share between threads and event loops; its settings
(verification on, the CA bundle) are the same for every client of the process. It is never
reset between runs: nothing in it depends on a run's settings.
"""

from __future__ import annotations

import ssl
import threading

import httpx

_SSL_CONTEXT: ssl.SSLContext | None = None
_SSL_LOCK = threading.Lock()


def shared_ssl_context() -> ssl.SSLContext:
    """The context, made at first use (httpx's recipe: certifi or ``SSL_CERT_FILE``)."""
    global _SSL_CONTEXT
    with _SSL_LOCK:
        if _SSL_CONTEXT is None:
            _SSL_CONTEXT = httpx.create_ssl_context()
        return _SSL_CONTEXT

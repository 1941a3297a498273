"""One check for every URL a user or a remote gives: http(s), a host, a port in range.

``urllib.parse`` raises on some malformed URLs (``http://[::1``, a port of 99999) only when a
later line asks for the port, far from where the URL came in; commands check their URL flags
here, before their heavy imports, so a typo costs a second and one line, not a traceback.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

from personae.errors import InputError


def split_web_url(text: object) -> SplitResult | None:
    """``text`` split as an ``http(s)://host[:port]/...`` URL, or ``None`` when it is not one."""
    if not isinstance(text, str):
        return None
    try:
        parts = urlsplit(text.strip())
        parts.port  # noqa: B018 - raises ValueError when the port is not a number in range
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return parts


def web_url(text: str, what: str, example: str) -> str:
    """``text`` stripped, when it is an http(s) URL with a host and a valid port.

    Raises:
        InputError: naming ``what`` (``--wiki``, ``HF_ENDPOINT``...) and an ``example``.
    """
    if split_web_url(text) is None:
        raise InputError(
            f"{what} {text.strip()[:200]!r} is not an http(s) URL",
            f"pass the address with its scheme and host, e.g. {example}",
        )
    return text.strip()

"""One check for every URL a user or a remote gives: http(s), a host, a port in range.

``urllib.parse`` raises on some malformed URLs (``http://[::1``, a port of 99999) only when a
later line asks for the port, far from where the URL came in; commands check their URL flags
here, before their heavy imports, so a typo costs a second and one line, not a traceback.
:func:`check_url_flags` runs it over every URL flag of every command (the CLI calls it before
any handler); a source that may be a file or a URL goes through :func:`source_url`.
"""

from __future__ import annotations

import argparse
import re
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


def same_site_url(text: str) -> str:
    """``text`` in one spelling per address: scheme and host lower case, no trailing ``/``.

    ``https://Hokuto.fandom.com/`` and ``https://hokuto.fandom.com`` are one wiki; a profile run
    keys its checkpoint by the wiki it was given, so the two must not be two runs. Text that is
    not a web URL comes back stripped.
    """
    parts = split_web_url(text)
    if parts is None:
        return text.strip()
    path = parts.path.rstrip("/")
    netloc = parts.netloc.lower() if "@" not in parts.netloc else parts.netloc
    return parts._replace(scheme=parts.scheme.lower(), netloc=netloc, path=path).geturl()


_SCHEME = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*://")
"""Text that starts like a URL (``scheme://``): a file name never does."""


def source_url(text: str, what: str, example: str) -> str | None:
    """``text`` checked as a URL when it is written as one, ``None`` when it is a file path.

    For inputs that take either (a persona source, a reference page): ``http://[::1/wiki/X``
    is a malformed URL, not a file named so.

    Raises:
        InputError: ``text`` starts with ``scheme://`` but is not a valid http(s) URL.
    """
    return web_url(text, what, example) if _SCHEME.match(text) else None


URL_FLAGS: dict[str, tuple[str, str]] = {
    "wiki": ("the wiki URL", "https://hokuto.fandom.com"),
    "server": ("--server", "http://127.0.0.1:2024"),
    "endpoint": ("--endpoint", "https://huggingface.co"),
    "exclude_url": ("--exclude-url", "https://example.org/page"),
}
"""The flags (argparse ``dest``) that take a URL, each with its name in messages and an example."""
SOURCE_FLAGS: dict[str, tuple[str, str]] = {
    "source": ("the persona source", "https://haruhi.fandom.com/wiki/Kyon"),
    "reference": ("--reference", "https://hokuto.fandom.com/wiki/Toki"),
}
"""The flags that take a file or a URL: checked as a URL when written as one."""


def check_url_flags(args: argparse.Namespace) -> None:
    """Check every URL a command was given (any command, any of :data:`URL_FLAGS`).

    Raises:
        InputError: naming the flag, the value and an example.
    """
    for dest, (what, example) in URL_FLAGS.items():
        value = getattr(args, dest, None)
        for url in value if isinstance(value, list) else [value]:
            if isinstance(url, str) and url:  # "" is some flags' default: not given
                web_url(url, what, example)
    for dest, (what, example) in SOURCE_FLAGS.items():
        value = getattr(args, dest, None)
        if isinstance(value, str):
            source_url(value, what, example)

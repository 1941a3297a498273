"""Credentials kept out of messages: a URL's user and password, a ``password=`` parameter.

CI logs keep stderr, so a mistyped setting must not print the password it holds. Every
:class:`~personae.errors.PersonaeError` passes its problem through :func:`hide_credentials`;
a setting echoed whole (``PERSONAE_CHECKPOINTER``) goes through :func:`masked_setting`, which
also covers values too mangled to parse as a URL.
"""

from __future__ import annotations

import re

MASK = "***"
_PASSWORD_PARAM = re.compile(
    r"""(?i)\b(password|passwd|pwd)(\s*=\s*)('(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?|[^\s&;,]*)"""
)
"""A ``password=...`` conninfo or query parameter, quoted or not."""
_USERINFO = re.compile(r"//\S*@")
"""From ``//`` to the last ``@`` of a run without spaces: a URL's ``user:password@``."""


def hide_credentials(text: str) -> str:
    """``text`` with every ``//user:password@`` and ``password=...`` replaced by ``***``."""
    return _USERINFO.sub(f"//{MASK}@", _PASSWORD_PARAM.sub(_masked_param, text))


def _masked_param(match: re.Match[str]) -> str:
    """``password=***``, keeping the quote that closes the message's quoting of the value."""
    value = match.group(3)
    closing = value[-1] if value[-1:] in ("'", '"') and value[:1] not in ("'", '"') else ""
    return f"{match.group(1)}{match.group(2)}{MASK}{closing}"


def masked_setting(value: str) -> str:
    """A connection setting as it may be shown: nothing between its scheme and its last ``@``.

    Parsed or not: ``postgres//u:pw@h/db`` (a missing colon), ``postgresql://u:p@ss@h/db``
    (an unescaped ``@``) and ``postgresql://u:p w@h`` (a space) all lose the part that may
    hold the password. A value without ``@`` loses the part after ``//`` up to the first ``/``
    when that part has a ``:`` not followed by a port (``postgresql://u:pw`` forgot the host).
    """
    value = _PASSWORD_PARAM.sub(_masked_param, value)
    if "//" in value:
        prefix, _, rest = value.partition("//")
        prefix += "//"
    else:
        scheme = re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", value)
        prefix = scheme.group(0) if scheme else ""
        rest = value[len(prefix) :]
    if "@" in rest:
        return f"{prefix}{MASK}{rest[rest.rindex('@') :]}"
    authority, slash, tail = rest.partition("/")
    port = authority.rpartition(":")[2]
    if ":" in authority and not (port.isdecimal() or authority.endswith("]")):
        return f"{prefix}{MASK}{slash}{tail}"
    return value

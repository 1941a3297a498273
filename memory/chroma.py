"""Opening Chroma: embedded on disk by default, a Chroma server when ``CHROMA_HOST`` is set."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import chromadb
from chromadb.api import ClientAPI
from chromadb.config import Settings as ChromaSettings

from personae.errors import ConfigurationError
from personae.settings import Settings

_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")


def safe_collection_name(name: str, prefix: str = "") -> str:
    """A valid, collision-free Chroma collection name for any storyline name.

    Chroma accepts 3-512 chars of ``[a-zA-Z0-9._-]`` starting and ending alphanumerically;
    names like ``Poppin'Party`` or ``Pastel*Palettes`` are cleaned and suffixed with a short
    hash of the original so two names that clean to the same text stay apart.
    """
    raw = f"{prefix}{name}"
    cleaned = _UNSAFE.sub("_", raw).strip("._-") or "x"
    if cleaned != raw or len(cleaned) < 3:
        digest = hashlib.blake2b(raw.encode("utf-8"), digest_size=4).hexdigest()
        cleaned = f"{cleaned[:480]}_{digest}"
    return cleaned[:512]


def open_chroma(path: Path | None, settings: Settings | None = None) -> ClientAPI:
    """A Chroma client: HTTP to ``CHROMA_HOST`` when configured, else persistent at ``path``.

    ``path=None`` without a server gives an in-memory client (tests, throwaway runs).
    """
    chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    if settings is not None and settings.chroma_host:
        try:
            return chromadb.HttpClient(
                host=settings.chroma_host, port=settings.chroma_port, settings=chroma_settings
            )
        except Exception as error:
            raise ConfigurationError(
                f"cannot reach the Chroma server at {settings.chroma_host}:{settings.chroma_port} "
                f"({type(error).__name__})",
                "start it or unset CHROMA_HOST to use embedded Chroma on disk",
            ) from None
    if path is None:
        return chromadb.EphemeralClient(settings=chroma_settings)
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=chroma_settings)

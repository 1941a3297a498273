"""`personae eval persona-qa` (registered below; implemented in the next increment)."""

from __future__ import annotations

from typing import Any


def register(protocols: Any) -> None:
    """Nothing yet."""

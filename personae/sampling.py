"""Sampling settings (temperature, top-p) per model role: their syntax and ranges.

Kept apart from :mod:`personae.llm` (which loads LangChain and OpenAI) so the CLI checks
``--temperature abc`` in milliseconds, before any heavy import.
"""

from __future__ import annotations

from typing import Literal

from personae.errors import ConfigurationError

ModelRole = Literal["strong", "fast", "judge"]
"""The three model roles: strong (writing, acting), fast (routine calls), judge (evals)."""
ROLES: tuple[ModelRole, ...] = ("strong", "fast", "judge")
SAMPLING_VARIABLES = {"temperature": "PERSONAE_TEMPERATURE", "top_p": "PERSONAE_TOP_P"}
"""Sampling settings and the variable each is read from (the flags ``--temperature``/``--top-p``
win). A value is either one number for every role (``0.7``) or per role
(``judge=0,strong=0.85``), or both (``0.7,judge=0``)."""
_SAMPLING_RANGE = {"temperature": (0.0, 2.0), "top_p": (0.0, 1.0)}


def parse_sampling(text: str, setting: str) -> dict[ModelRole, float]:
    """``{role: value}`` from ``0.7``, ``judge=0,strong=0.85`` or ``0.7,judge=0``.

    Raises:
        ConfigurationError: A value is not a number in range, or names an unknown role.
    """
    low, high = _SAMPLING_RANGE[setting]
    values: dict[ModelRole, float] = {}
    fix = f"write {setting} as 0.7 or judge=0,strong=0.85 (roles: {', '.join(ROLES)})"
    for part in (p.strip() for p in text.split(",") if p.strip()):
        role, sep, number = part.rpartition("=") if "=" in part else ("", "", part)
        try:
            value = float(number)
        except ValueError:
            raise ConfigurationError(f"{setting} {part!r} is not a number", fix) from None
        if not low <= value <= high:
            raise ConfigurationError(f"{setting} {value} is outside {low}-{high}", fix)
        if sep and role.strip() not in ROLES:
            raise ConfigurationError(f"{setting} names an unknown role {role!r}", fix)
        targets: tuple[ModelRole, ...] = (role.strip(),) if sep else ROLES  # type: ignore[assignment]
        for target in targets:
            if sep or target not in values:
                values[target] = value
    return values

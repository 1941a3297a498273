"""The lazy loader behind both front doors (``personae`` and ``personae.evals``).

Each front door holds one table of its public names (``_EXPORTS``: name → module, attribute);
its ``__getattr__`` loads a name from it on first use, so ``import personae`` and ``personae
--help`` load no heavy library. ``__all__`` and the ``TYPE_CHECKING`` imports that IDEs read
are generated from the same table (``scripts/public_names.py``; ``tests/test_public_api.py``
fails when they disagree).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any


def load_public_name(
    namespace: MutableMapping[str, Any], exports: Mapping[str, tuple[str, str]], name: str
) -> Any:
    """The object behind ``name``, kept in ``namespace`` so the next use costs nothing.

    Raises:
        AttributeError: ``name`` is not in the table (Python's own message for a module).
    """
    try:
        module, attribute = exports[name]
    except KeyError:
        raise AttributeError(
            f"module {namespace['__name__']!r} has no attribute {name!r}"
        ) from None
    value = getattr(importlib.import_module(module), attribute)
    namespace[name] = value
    return value

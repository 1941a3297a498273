"""Import paths the README documented before the papers got their own subfolders, kept for one release.

Library users wrote ``from personae.graphs.profiler import build_graph``; the code now lives in
``personae.graphs.characterhub.profiler``. The old paths keep working until the next release,
and every name taken through one warns (``DeprecationWarning``) with the path to use instead.
No file stands at the old place: a meta-path finder answers for the old module names, so the
folders hold only the new layout.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import pkgutil
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

REMOVAL = "the next release"


def forwarding_getattr(old: str, new: str, *, skip: Sequence[str] = ()) -> Callable[[str], Any]:
    """A module ``__getattr__`` that hands out ``new``'s names under ``old``, with a warning.

    ``skip`` lists names that must stay unknown here (a package's submodules, which the import
    system loads itself when ``__getattr__`` says they are missing).
    """

    def __getattr__(name: str) -> Any:
        if name.startswith("__") or name in skip:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(new), name)
        warnings.warn(
            f"{old} moved to {new}: import {name} from there ({old} goes in {REMOVAL})",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    return __getattr__


def package_getattr(old: str, new: str, package_path: Sequence[str]) -> Callable[[str], Any]:
    """``forwarding_getattr`` for a package that took the old module's name (its submodules pass)."""
    submodules = [info.name for info in pkgutil.iter_modules(list(package_path))]
    return forwarding_getattr(old, new, skip=submodules)


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers imports of moved module names with a module that forwards to the new one."""

    def __init__(self, moved: dict[str, str]) -> None:
        self.moved = moved

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        new = self.moved[module.__name__]
        module.__doc__ = f"Moved to {new} (this path goes in {REMOVAL})."
        module.__getattr__ = forwarding_getattr(module.__name__, new)  # type: ignore[method-assign]


def install_moved_modules(moved: dict[str, str]) -> None:
    """Let ``import OLD`` work for each ``OLD -> NEW`` of ``moved`` (idempotent)."""
    for finder in sys.meta_path:
        if isinstance(finder, _MovedModules):
            finder.moved.update(moved)
            return
    sys.meta_path.append(_MovedModules(dict(moved)))

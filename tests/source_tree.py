"""The package's source files, each parsed once per test session.

Why: a dozen tests walk every module's syntax tree (import ranks, caches, settings, files,
schemas, node sizes); parsing the 200 files costs about a second each time. Trees are shared:
a test reads them and never changes one.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path


@cache
def parsed(path: Path) -> ast.Module:
    """The syntax tree of the Python file at ``path``."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@cache
def walked(path: Path) -> tuple[ast.AST, ...]:
    """Every node of :func:`parsed`'s tree, in ``ast.walk`` order (walked once per session:
    a walk of the package costs about as much as parsing it, and eight tests walk it)."""
    return tuple(ast.walk(parsed(path)))

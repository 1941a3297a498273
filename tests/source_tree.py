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

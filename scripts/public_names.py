"""Regenerate ``__all__`` and the ``TYPE_CHECKING`` imports of both front doors from their table.

``personae/__init__.py`` and ``evals/__init__.py`` (``personae.evals``) each hold one table of
their public names (``_EXPORTS``: name → module, attribute). Their lazy ``__getattr__`` reads
it at run time; IDEs, pyright, mypy and the docs' API page read the literal ``__all__`` and
``TYPE_CHECKING`` imports, which this writes from the table between the two marker lines.
``tests/test_public_api.py`` fails when a block and its table disagree::

    uv run python scripts/public_names.py
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRONT_DOORS = {
    "personae": ROOT / "personae/__init__.py",
    "personae.evals": ROOT / "evals/__init__.py",
}
"""Each front door's module and its file."""
EXTRA = {"personae": ("__version__",), "personae.evals": ()}
"""Public names imported eagerly, outside the table."""
BEGIN = "# generated from _EXPORTS by `uv run python scripts/public_names.py`: do not edit\n"
END = "# end of generated\n"


def table(path: Path) -> dict[str, tuple[str, str]]:
    """The ``_EXPORTS`` table of a front door, read from its source (no import)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "_EXPORTS":
            assert node.value is not None
            found: dict[str, tuple[str, str]] = ast.literal_eval(node.value)
            return found
    raise SystemExit(f"{path}: no _EXPORTS table")


def block(exports: dict[str, tuple[str, str]], extra: tuple[str, ...]) -> str:
    """The generated lines: the ``TYPE_CHECKING`` imports and ``__all__``, from the table."""
    by_module: dict[str, list[str]] = {}
    for name, (module, attribute) in exports.items():
        alias = attribute if attribute == name else f"{attribute} as {name}"
        by_module.setdefault(module, []).append(alias)
    lines = ["if TYPE_CHECKING:  # what IDEs, pyright and mypy read; __getattr__ loads at run time"]
    for module in sorted(by_module):
        lines.append(f"    from {module} import {', '.join(sorted(by_module[module]))}")
    names = sorted({*exports, *extra})
    lines += ["", "__all__ = [", *(f'    "{name}",' for name in names), "]"]
    return "\n".join(lines) + "\n"


def declared(path: Path) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """What a front door declares: its ``TYPE_CHECKING`` imports and its literal ``__all__``."""
    imports: dict[str, tuple[str, str]] = {}
    names: list[str] = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module
                for alias in statement.names:
                    imports[alias.asname or alias.name] = (statement.module, alias.name)
        elif isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__":
            names = list(ast.literal_eval(node.value))
    return imports, names


def write(module: str, path: Path) -> None:
    """Replace the lines between the markers of ``path`` with the block of its table."""
    text = path.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path}: the marker lines are missing ({BEGIN.strip()!r})")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(head + BEGIN + block(table(path), EXTRA[module]) + END + tail, encoding="utf-8")


def main() -> int:
    """Write both front doors, then let ruff sort and format the imports as the repo does."""
    for module, path in FRONT_DOORS.items():
        write(module, path)
    files = [str(p) for p in FRONT_DOORS.values()]
    ruff = [sys.executable, "-m", "ruff"]
    subprocess.run([*ruff, "check", "--fix", "--select", "I", "-q", *files], check=True)
    subprocess.run([*ruff, "format", "-q", *files], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

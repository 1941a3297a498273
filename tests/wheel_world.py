"""A copy of the checkout and the wheel built from it, for the packaging tests.

Why a copy: building in place writes ``build/`` and ``*.egg-info`` into the working tree (and
the suite's other process may be reading it); a copy of the files git tracks, symlinks kept as
symlinks, is what a fresh clone holds. The wheel is built with the environment's own
setuptools (``build_meta``, no build isolation), so the test needs no registry.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB_FOLDERS = ("agents", "tools", "graphs", "memory", "evals")


def copy_checkout(dest: Path, root: Path = ROOT) -> Path:
    """Copy the files git tracks under ``root`` to ``dest`` (symlinks stay links); return ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, check=True, capture_output=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source, target = root / name, dest / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the work tree, not yet in the index
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)
    return dest


def build_wheel(root: Path, out: Path) -> Path:
    """Build the wheel of the project at ``root`` into ``out`` (setuptools, no isolation)."""
    out.mkdir(parents=True, exist_ok=True)
    code = "import sys; from setuptools import build_meta as b; print(b.build_wheel(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(out)], cwd=root, capture_output=True, text=True
    )
    assert done.returncode == 0, f"the wheel did not build:\n{done.stderr[-3000:]}"
    return out / done.stdout.strip().splitlines()[-1]


def wheel_names(wheel: Path) -> set[str]:
    """The file names inside ``wheel``, its metadata folder left out."""
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if ".dist-info/" not in name}


def source_packages(root: Path) -> set[str]:
    """Every package of the source tree as installed names: ``personae/`` and each job folder."""
    found = {"personae"}
    for path in (root / "personae").rglob("__init__.py"):  # personae's own subpackages
        found.add(".".join(path.parent.relative_to(root).parts))
    for folder in JOB_FOLDERS:
        for path in (root / folder).rglob("__init__.py"):
            found.add(".".join(("personae", *path.parent.relative_to(root).parts)))
    return found


def wheel_packages(names: set[str]) -> set[str]:
    """The packages a wheel holds: each folder with an ``__init__.py``, dotted."""
    return {".".join(Path(name).parent.parts) for name in names if name.endswith("/__init__.py")}

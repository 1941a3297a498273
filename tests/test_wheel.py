"""The wheel ships every package of the source tree, and the checkout reads as installed.

agents/ tools/ graphs/ memory/ evals/ stay real folders at the repository root (the design
card); ``personae/<folder>`` is a committed symlink to each, and setuptools finds the packages
by walking ``personae/``. A paper whose folders are missing from the wheel installs silently
without the paper, so the wheel is built and compared with the tree, for every paper.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from wheel_world import (
    JOB_FOLDERS,
    ROOT,
    build_wheel,
    copy_checkout,
    source_packages,
    wheel_names,
    wheel_packages,
)

PAPERS = ("characterhub", "bookmarks", "amadeus", "arcane")


def test_each_job_folder_is_a_committed_symlink_under_personae() -> None:
    for folder in JOB_FOLDERS:
        link = ROOT / "personae" / folder
        assert link.is_symlink(), f"personae/{folder} must be a symlink to ../{folder}"
        assert os.readlink(link) == f"../{folder}"
        assert (ROOT / folder).is_dir() and not (ROOT / folder).is_symlink()


def test_pyproject_lists_no_package_dir() -> None:
    # A package-dir mapping is followed by Python's import system only: pyright and mypy run
    # in place would not resolve personae.* across the folders.
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "package-dir" not in text


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    checkout = copy_checkout(tmp_path_factory.mktemp("checkout"))
    wheel = build_wheel(checkout, tmp_path_factory.mktemp("dist"))
    return checkout, wheel_names(wheel)


@pytest.mark.slow
def test_the_wheel_holds_every_package_of_the_tree(built: tuple[Path, set[str]]) -> None:
    checkout, names = built
    missing = source_packages(checkout) - wheel_packages(names)
    assert not missing, f"packages missing from the wheel: {sorted(missing)}"
    for folder in JOB_FOLDERS:
        for paper in PAPERS:
            if (checkout / folder / paper).is_dir():
                assert f"personae/{folder}/{paper}/__init__.py" in names


@pytest.mark.slow
def test_the_wheel_holds_every_module_and_data_file(built: tuple[Path, set[str]]) -> None:
    checkout, names = built
    for folder in JOB_FOLDERS:
        for path in (checkout / folder).rglob("*.py"):
            assert f"personae/{path.relative_to(checkout).as_posix()}" in names
    data = "personae/evals/amadeus/data/incharacter/LICENSE"
    assert data in names
    assert not any(name.startswith(("tests/", "benchmarks/", "agents/")) for name in names)


def test_the_package_lists_catch_a_missing_paper(tmp_path: Path) -> None:
    # The check the wheel test makes, on a tree where one paper's folder is not a package.
    (tmp_path / "personae").mkdir()
    for folder in JOB_FOLDERS:
        (tmp_path / folder / "newpaper").mkdir(parents=True)
        (tmp_path / folder / "newpaper" / "__init__.py").write_text("")
    names = {"personae/__init__.py"}
    names |= {f"personae/{folder}/newpaper/__init__.py" for folder in JOB_FOLDERS[1:]}
    assert source_packages(tmp_path) - wheel_packages(names) == {"personae.agents.newpaper"}

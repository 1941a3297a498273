"""`personae --help`, `--version` and argument errors load no heavy library (lazy imports)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from personae import __version__

HEAVY = ("langgraph", "langchain_core", "langchain_openai", "openai", "chromadb", "httpx")

pytestmark = pytest.mark.slow

PROBE = """
import sys
from personae.cli import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    print("EXIT:" + str(done.code), file=sys.stderr)
print("LOADED:" + ",".join(sorted({m.split(".")[0] for m in sys.modules})), file=sys.stderr)
"""


def run_cli(*argv: str) -> tuple[str, str, set[str]]:
    """Stdout, stderr (probe lines removed) and the top-level packages the invocation loaded."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=False
    )
    lines = done.stderr.splitlines()
    loaded = next(x for x in lines if x.startswith("LOADED:")).removeprefix("LOADED:")
    rest = "\n".join(x for x in lines if not x.startswith("LOADED:"))
    return done.stdout, rest, set(loaded.split(","))


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["profile", "--help"],
        ["characterhub", "eval", "--help"],
        ["bookmarks", "bench", "--help"],
        ["bookmarks", "act", "--help"],
        ["bookmarks", "fetch", "--help"],
    ],
)
def test_help_loads_no_heavy_library(argv: list[str]) -> None:
    out, err, loaded = run_cli(*argv)
    assert "usage: personae" in out and "EXIT:0" in err
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_version_and_argument_errors_load_no_heavy_library() -> None:
    out, err, loaded = run_cli("--version")
    assert out.strip() == f"personae {__version__}" and "EXIT:0" in err
    assert loaded.isdisjoint(HEAVY)
    out, err, loaded = run_cli("profile", "--max-rounds", "three")
    assert "invalid int value: 'three'" in err and "EXIT:2" in err
    assert loaded.isdisjoint(HEAVY)

"""The official MCP conformance suite and the Node 22 it needs, in a cache folder under build/.

``@modelcontextprotocol/conformance`` needs Node 22 or later; the npm package ``node@22`` ships
one, so ``npm`` of any Node installs both with no system change. `.ci/run` runs
``python tests/conformance_world.py install`` (about 15 s, the npm registry as for pyright);
the tests run only what is installed and never reach the network themselves. Without the
folder they skip with the command that installs it (under CI, ``CI=true``, they fail).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "build" / "mcp-conformance"
"""The cache: ignored by git, ruff and pytest (build/), kept between runs."""
PACKAGES = ("node@22.23.3", "@modelcontextprotocol/conformance@0.1.16")
"""Pinned: a new suite release adds scenarios, which a bump should show in its own commit."""
INSTALL = "uv run --frozen python tests/conformance_world.py install"


def installed() -> tuple[Path, Path] | None:
    """Node 22's executable and the suite's CLI script, or ``None`` when not installed."""
    node = FOLDER / "node_modules" / "node" / "bin" / "node"
    cli = FOLDER / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    return (node, cli) if node.is_file() and cli.is_file() else None


def install() -> None:
    """Install the pinned packages into :data:`FOLDER` with npm (a no-op once there)."""
    if installed() is not None:
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("conformance_world: npm is missing; install Node.js (it ships npm)")
    FOLDER.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--prefix", str(FOLDER), "--no-audit", "--no-fund", *PACKAGES]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    if installed() is None:
        raise SystemExit(f"conformance_world: npm ran but {FOLDER} has no node 22 or suite")


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        raise SystemExit(f"usage: {INSTALL}")
    install()

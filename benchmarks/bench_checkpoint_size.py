"""A profile's checkpoint file kept whole (``--keep-checkpoints``) and pruned (the default).

Run: uv run python benchmarks/bench_checkpoint_size.py

Profiles Kenshiro twice in the test suite's fake world (a loopback wiki and Tavily, the
scripted model of ``tests/profiler_world.py``): once keeping every checkpoint, once pruned to
the last one (then compacted). Prints the size of ``.checkpoints.sqlite``, its rows and the
size of ``profile.json`` for each.
"""

from __future__ import annotations

import contextlib
import io
import os
import sqlite3
import sys
import tempfile
from pathlib import Path

# The world is a test fixture (tests/), not part of the shipped package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from profiler_world import fake_web, scripted_model  # noqa: E402

from personae.cli import main  # noqa: E402
from personae.loopback import LoopbackWebServer  # noqa: E402
from personae.testing import block_remote_network, override_models  # noqa: E402

FOLDER = "kenshiro--fist-of-the-north-star"


def _rows(database: Path) -> tuple[int, int]:
    with contextlib.closing(sqlite3.connect(database)) as db:
        checkpoints = db.execute("select count(*) from checkpoints").fetchone()[0]
        writes = db.execute("select count(*) from writes").fetchone()[0]
    return int(checkpoints), int(writes)


def main_() -> None:
    """Profile twice and print both checkpoint files' sizes."""
    web, _, _ = fake_web()
    override_models(specs={"openai:bench": scripted_model(score=0.9)})
    with tempfile.TemporaryDirectory() as tmp, LoopbackWebServer(web.route) as server:
        os.environ.update(
            TAVILY_API_KEY="tvly-test",
            TAVILY_BASE_URL=server.url,
            PERSONAE_MODEL="openai:bench",
            PERSONAE_CACHE_DIR=str(Path(tmp) / "cache"),
        )
        print(f"{'run':<26}{'checkpoints':>12}{'writes':>8}{'file':>12}{'profile.json':>14}")
        for label, extra in (("--keep-checkpoints", ["--keep-checkpoints"]), ("pruned", [])):
            out = Path(tmp) / label.strip("-")
            argv = ["profile", "Kenshiro", "--franchise", "Fist of the North Star"]
            argv += ["--wiki", server.url, "--out", str(out), *extra]
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = main(argv)
            assert code == 0, err.getvalue()
            database = out / ".checkpoints.sqlite"
            checkpoints, writes = _rows(database)
            size = database.stat().st_size
            profile = (out / FOLDER / "profile.json").stat().st_size
            print(f"{label:<26}{checkpoints:>12}{writes:>8}{size:>12,}{profile:>14,}")


if __name__ == "__main__":
    with block_remote_network():
        main_()

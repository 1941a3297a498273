"""Page times of the web page's arcs, storylines and reports views.

Run: uv run python benchmarks/bench_web_story.py [--runs 1000] [--repeat 20]

Serves the app in process (Starlette's test client: the whole ASGI app, no socket) over the
sample story prepared as the docs prepare it (novel imported, Mara's arcs built by the scripted
model; the gull_rock storyline) and a runs folder of ``--runs`` evaluation runs, each with a
``report.md`` and a ``summary.json``. Prints the median time of each page over ``--repeat``
requests, after one warm-up request each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

# The sample story's preparation is a test fixture (tests/), not part of the shipped package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from starlette.testclient import TestClient  # noqa: E402
from web_story_world import CHARACTER, NOVEL, prepare_story  # noqa: E402

from personae.web.app import create_app  # noqa: E402
from personae.web.options import WebOptions  # noqa: E402

REPORT = "# Run\n\n| method | score |\n|---|---|\n| bookmarks | 0.61 |\n"


def write_runs(runs: Path, count: int) -> None:
    """``count`` run folders, each with a Markdown report, a summary and its results."""
    for number in range(count):
        folder = runs / f"run-{number:04d}"
        folder.mkdir(parents=True)
        (folder / "report.md").write_text(REPORT, encoding="utf-8")
        (folder / "summary.json").write_text('{"score": 0.61}', encoding="utf-8")
        (folder / "results.jsonl").write_text("{}\n", encoding="utf-8")


def median_ms(client: TestClient, address: str, repeat: int) -> float:
    """Median milliseconds of ``repeat`` GETs of ``address`` (after one warm-up)."""
    get = client.get
    assert get(address).status_code == 200, address
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        get(address)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    """Prepare the folders, then time each page."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        story = prepare_story(root / "story")
        write_runs(root / "runs", args.runs)
        options = WebOptions(
            data_dir=story.data_dir, storylines=(story.storyline,), runs_dir=root / "runs"
        )
        client = TestClient(create_app(options), base_url="http://127.0.0.1:8765")
        pages = {
            "/arcs": "/arcs",
            "timeline": f"/arcs/{NOVEL}/{CHARACTER}?chapter=3",
            "/storylines": "/storylines",
            "storyline (60 actions, no bank)": f"/storylines/0?character={CHARACTER}&position=40",
            f"/reports ({args.runs} runs, {2 * args.runs} reports)": "/reports",
            "one Markdown report": "/reports/view/run-0001/report.md",
        }
        for label, address in pages.items():
            print(f"{label}: {median_ms(client, address, args.repeat):.1f} ms")


if __name__ == "__main__":
    main()

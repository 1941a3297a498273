"""Load times of `personae web`'s Profiles list and a profile page with 1,000 profiles.

Run: uv run python benchmarks/bench_web.py [--profiles 1000] [--requests 20] [--sources 24]

One real profile is made first (the profiler on the sample wiki with the sample world's scripted
model, as tests/profile_page_world.py does); 1,000 profile folders are then written from it
into a temporary folder (``profile.json``, ``profile.md``, ``card.json``), each with its own
name, franchise, number of facts and ``--sources`` sources of 2,000 characters of passage (a
real run with web search keeps about that much evidence: 30-60 kB per profile.json). The app is
served by uvicorn on a loopback port and read with httpx, as a browser would.

Prints: the first /profiles request (every profile.json parsed), the median of ``--requests``
later ones (the summaries cached by file time and size: one stat per profile), the median of
one /profiles/{key} page, and the median of /profiles after one profile changed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The scripted model and the served app are test fixtures (tests/), not the shipped package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import httpx  # noqa: E402
from profile_page_world import write_sample_profile  # noqa: E402
from web_world import serving  # noqa: E402

from personae.memory.characterhub.profile_store import profile_key  # noqa: E402
from personae.web.app import create_app  # noqa: E402
from personae.web.options import WebOptions  # noqa: E402

PASSAGE = (
    "Mara climbed the tower, stuffed the pane with her coat, relit the lamp and wound the "
    "clock; a lost fishing boat came home under the beam. "
)


def synthetic(document: dict[str, Any], index: int, sources: int) -> dict[str, Any]:
    """Profile ``index``: the real document renamed, its facts and sources varied in number."""
    name, franchise = f"Keeper {index:04d}", f"Lighthouse Tales {index % 37}"
    real_sources = document["sources"]
    made = [
        {**real_sources[i % len(real_sources)], "id": f"S{i + 1}", "content": PASSAGE * 14}
        for i in range(sources)
    ]
    facts = [fact for items in document["dimensions"].values() for fact in items]
    dimensions: dict[str, list[dict[str, Any]]] = {d: [] for d in document["dimensions"]}
    for n in range(6 + index % 30):
        fact = facts[n % len(facts)]
        dimension = list(dimensions)[n % len(dimensions)]
        ids = [f"S{(n + k) % sources + 1}" for k in range(2)]
        dimensions[dimension].append({"text": f"{fact['text']} ({n})", "source_ids": ids})
    return {
        **document,
        "character": name,
        "franchise": franchise,
        "dimensions": dimensions,
        "sources": made,
    }


def write_profiles(folder: Path, real: Path, count: int, sources: int) -> list[str]:
    """``count`` profile folders made from the real profile at ``real``; their keys."""
    document = json.loads(real.read_text(encoding="utf-8"))
    markdown = (real.parent / "profile.md").read_text(encoding="utf-8")
    card = (real.parent / "card.json").read_text(encoding="utf-8")
    keys = []
    for index in range(count):
        made = synthetic(document, index, sources)
        key = profile_key(made["character"], made["franchise"])
        (folder / key).mkdir(parents=True)
        (folder / key / "profile.md").write_text(markdown, encoding="utf-8")
        (folder / key / "card.json").write_text(card, encoding="utf-8")
        (folder / key / "profile.json").write_text(json.dumps(made, indent=2), encoding="utf-8")
        keys.append(key)
    return keys


def timed(client: httpx.Client, path: str) -> tuple[float, int]:
    """Seconds of one GET of ``path`` and the page's size (a non-200 answer stops the bench)."""
    start = time.perf_counter()
    response = client.get(path)
    elapsed = time.perf_counter() - start
    if response.status_code != 200:
        raise SystemExit(f"GET {path}: HTTP {response.status_code}")
    return elapsed, len(response.content)


def median_ms(client: httpx.Client, path: str, requests: int) -> float:
    return 1000 * statistics.median(timed(client, path)[0] for _ in range(requests))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--profiles", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--sources", type=int, default=24)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        real = write_sample_profile(root / "sample")
        folder = root / "profiles"
        keys = write_profiles(folder, real, args.profiles, args.sources)
        size = sum(path.stat().st_size for path in folder.glob("*/profile.json"))
        app = create_app(WebOptions(profiles_dir=folder, personas_dir=root / "personas"))
        with serving(app) as base, httpx.Client(base_url=base, timeout=120) as client:
            first, page_bytes = timed(client, "/profiles")
            warm = median_ms(client, "/profiles", args.requests)
            one = median_ms(client, f"/profiles/{keys[len(keys) // 2]}", args.requests)
            changed = []
            for n in range(args.requests):
                path = folder / keys[n] / "profile.json"
                path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
                changed.append(timed(client, "/profiles")[0])
    print(f"{args.profiles} profiles, {size / 1e6:.1f} MB of profile.json "
          f"({args.sources} sources of {len(PASSAGE * 14)} characters each); "
          f"the list page is {page_bytes / 1e3:.0f} kB")  # fmt: skip
    print(f"/profiles first request (every profile.json parsed): {1000 * first:.0f} ms")
    print(f"/profiles later requests (cached by file time and size): median {warm:.1f} ms")
    print(f"/profiles after one profile changed: median {1000 * statistics.median(changed):.1f} ms")
    print(f"/profiles/KEY (one profile page): median {one:.1f} ms")


if __name__ == "__main__":
    main()

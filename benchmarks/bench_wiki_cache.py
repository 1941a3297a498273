"""Wiki fetches twice over one cache dir: the second run should send (almost) no requests.

Runs a character-page lookup (search, redirect, disambiguation) and a few wiki searches against
a loopback FakeMediaWiki with injected per-request latency, through the real PoliteHttpClient
and MediaWikiClient, then repeats with a fresh client on the same cache directory.

    uv run python benchmarks/bench_wiki_cache.py [--latency 0.05] [--pages 30]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from personae.loopback import LoopbackWebServer
from personae.tools.http import PoliteHttpClient
from personae.tools.wiki import MediaWikiClient

# The fake web is a test fixture (tests/fake_web.py), not part of the shipped package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fake_web import FakeMediaWiki  # noqa: E402

QUERIES = ("Kenshiro personality", "Hokuto brothers rivalry", "Nanto Seiken fighter")


def character_page(name: str, index: int) -> str:
    return (
        '<aside class="portable-infobox"><section class="pi-group"><h2 class="pi-header">Info</h2>'
        f'<div class="pi-data" data-source="style"><h3 class="pi-data-label">Style</h3>'
        f'<div class="pi-data-value">{"Hokuto Shinken" if index % 2 else "Nanto Seiken"}</div></div>'
        f"</section></aside><p>{name} is a fighter of the Hokuto brothers era, number {index}.</p>"
        f"<h2>Personality</h2><p>{name} is proud and calm; rivalry drives him.</p>"
        f"<h2>History</h2><p>{' '.join(['He trained for years in the wasteland.'] * 20)}</p>"
    )


def build_wiki(pages: int) -> FakeMediaWiki:
    content = {f"Fighter {i}": character_page(f"Fighter {i}", i) for i in range(pages)}
    content["Kenshiro"] = character_page("Kenshiro", 1)
    content["Ken Masters"] = "<p>Ken Masters is a Street Fighter character.</p>"
    content["Ken"] = (
        "<p><b>Ken</b> may refer to:</p><ul>"
        '<li><a href="/wiki/Kenshiro" title="Kenshiro">Kenshiro</a>, of Fist of the North Star</li>'
        '<li><a href="/wiki/Ken_Masters" title="Ken Masters">Ken Masters</a>, of Street Fighter</li></ul>'
    )
    return FakeMediaWiki(content, redirects={"Kenshirō": "Kenshiro"})


async def one_run(base_url: str, cache_dir: Path, allowed: str) -> tuple[int, int, int, float]:
    start = time.perf_counter()
    async with PoliteHttpClient(
        user_agent="Personae-bench/0.1 (+local)", cache_dir=cache_dir, allowed_hosts=[allowed]
    ) as http:
        wiki = MediaWikiClient(base_url, http=http)
        await wiki.find_character_page("Kenshirō", "Fist of the North Star")
        await wiki.find_character_page("Ken", "Fist of the North Star")
        results = await asyncio.gather(*(wiki.search(q, limit=3) for q in QUERIES))
        passages = sum(len(r) for r in results)
    return http.requests_made, http.cache_hits, passages, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument(
        "--latency", type=float, default=0.05, help="seconds added to every request"
    )
    parser.add_argument("--pages", type=int, default=30, help="filler pages in the wiki")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        LoopbackWebServer(build_wiki(args.pages).route, latency=args.latency) as server,
    ):
        allowed = server.url.split("//", 1)[1]
        print(
            f"fake wiki at {server.url}, latency {args.latency * 1000:.0f} ms/request, {args.pages + 3} pages"
        )
        for label in ("first run (cold cache)", "second run (same cache)"):
            made, hits, passages, seconds = asyncio.run(one_run(server.url, Path(tmp), allowed))
            print(
                f"{label:26s} requests_made={made:3d} cache_hits={hits:3d} passages={passages:2d} wall={seconds:6.3f}s"
            )
        print(f"server saw {len(server.requests)} requests in total")


if __name__ == "__main__":
    main()

"""Wall time of one profiler search round, parallel fan-out vs sequential, with web latency.

Run: uv run python benchmarks/bench_search_round.py [--latency 0.2] [--concurrency 14]

One round = the 7 planned queries x (web, wiki) = 14 searches, each through the REAL Tavily,
MediaWiki and polite HTTP clients (``search_once``, what the graph's ``search`` node runs)
against two loopback servers (the Tavily API and the wiki on different hosts) that add
``--latency`` seconds to every request. Wiki requests run one at a time across all searches
(politeness), Tavily requests in parallel, so the wiki bounds the round. Prints (does not
assert) the wall time at concurrency 1 and at ``--concurrency``, the requests served and the
speedup. No disk cache, so both runs send the same requests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from personae.agents.characterhub.query_planner import DIMENSION_KEYWORDS
from personae.graphs.characterhub.sources import search_once
from personae.graphs.characterhub.state import ProfilerContext
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.dimensions import DIMENSIONS

# The fake web is a test fixture (tests/fake_web.py), not part of the shipped package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fake_web import FakeMediaWiki, FakeTavily, FakeWeb  # noqa: E402

KENSHIRO = """<p>Kenshiro is the successor of Hokuto Shinken, from Fist of the North Star.</p>
<h2>Appearance</h2><p>Kenshiro has seven scars on his chest.</p>
<h2>Personality</h2><p>Kenshiro is stoic and kind.</p>
<h2>Abilities</h2><p>Kenshiro strikes the pressure points of his enemies.</p>
<h2>Relationships</h2><p>Raoh is Kenshiro's eldest brother; Yuria is his love.</p>
<h2>History</h2><p>Kenshiro was defeated by Shin, who took Yuria.</p>"""


def web_results(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Three pages for every query."""
    query = str(payload.get("query", ""))
    return [
        {"url": f"https://example.org/{i}", "title": f"Page {i}", "content": f"{query} text {i}."}
        for i in range(3)
    ]


def fake_tavily() -> FakeWeb:
    """The Tavily API (its own host: requests to it may run in parallel)."""
    return FakeWeb(tavily=FakeTavily(web_results))


def fake_wiki() -> FakeWeb:
    """A one-character wiki on another host (one request at a time, as for a real wiki)."""
    wiki = FakeMediaWiki({"Kenshiro": KENSHIRO, "Raoh": "<p>Raoh, brother of Kenshiro.</p>"})
    return FakeWeb(wiki=wiki)


async def one_round(
    tavily: LoopbackWebServer, wiki: LoopbackWebServer, concurrency: int
) -> tuple[float, int, int]:
    """Seconds, passages and requests of one round at ``concurrency``."""
    context = ProfilerContext(tavily_base_url=tavily.url, search_concurrency=concurrency)
    queries = [f"Kenshiro {DIMENSION_KEYWORDS[d].split()[0]}" for d in DIMENSIONS]
    before = len(tavily.requests) + len(wiki.requests)
    start = time.perf_counter()
    outcomes = await asyncio.gather(
        *(
            search_once(tool, query, wiki.url, context)
            for query in queries
            for tool in ("web", "wiki")
        )
    )
    elapsed = time.perf_counter() - start
    passages = sum(len(o.evidence) for o in outcomes)
    return elapsed, passages, len(tavily.requests) + len(wiki.requests) - before


def main() -> None:
    """Run the round sequentially and in parallel; print the figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds added per request")
    parser.add_argument("--concurrency", type=int, default=14, help="parallel searches")
    args = parser.parse_args()
    os.environ["TAVILY_API_KEY"] = "tvly-test"
    with (
        LoopbackWebServer(fake_tavily().route, latency=args.latency) as tavily,
        LoopbackWebServer(fake_wiki().route, latency=args.latency) as wiki,
    ):
        sequential = asyncio.run(one_round(tavily, wiki, 1))
        parallel = asyncio.run(one_round(tavily, wiki, args.concurrency))
    sys.stdout.write(
        f"search round: 7 queries x (web, wiki) = 14 searches, {args.latency:.2f} s per request\n"
        f"sequential (concurrency 1): {sequential[0]:6.2f} s  "
        f"{sequential[2]} requests, {sequential[1]} passages\n"
        f"parallel (concurrency {args.concurrency}): {parallel[0]:6.2f} s  "
        f"{parallel[2]} requests, {parallel[1]} passages\n"
        f"speedup: {sequential[0] / parallel[0]:.1f}x\n"
    )


if __name__ == "__main__":
    main()

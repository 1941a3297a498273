"""What an HTTP client costs to make: the process's one TLS context against one per client.

Run: uv run python benchmarks/bench_http_client.py [--clients 50]

Every web tool builds a :class:`~personae.tools.http.PoliteHttpClient`; building a TLS context
loads the whole CA bundle. Before issue 19 each client built two (httpx's transport and ours,
55 ms of CPU); now every client shares :func:`~personae.tools.http.shared_ssl_context`. Prints
the CPU time of the first client (which makes the process's context), the median of the next
``--clients`` (goal: <= 2 ms), and, measured in the same run, what one ``httpx`` context costs
(the reference: each client used to pay two).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import httpx
from measure import load

from personae.tools.http import PoliteHttpClient, shared_ssl_context


def cpu_ms(make: Callable[[], object]) -> float:
    start = time.process_time()
    made = make()
    spent = (time.process_time() - start) * 1000
    del made
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=50)
    args = parser.parse_args()
    print("$ " + " ".join(["python", *sys.argv]))
    first = cpu_ms(
        lambda: PoliteHttpClient(user_agent="bench/1 (bench@example.org)", cache_dir=None)
    )
    later = [
        cpu_ms(lambda: PoliteHttpClient(user_agent="bench/1 (bench@example.org)", cache_dir=None))
        for _ in range(args.clients)
    ]
    contexts = [cpu_ms(httpx.create_ssl_context) for _ in range(5)]
    shared = {id(shared_ssl_context()) for _ in range(3)}
    print(
        f"http: first PoliteHttpClient {first:.1f} ms CPU (makes the process's TLS context); "
        f"the next {args.clients}: median {statistics.median(later):.2f} ms, "
        f"max {max(later):.2f} ms CPU each (goal <= 2 ms); TLS contexts in the process: "
        f"{len(shared)}; reference, same run: one httpx TLS context costs "
        f"{statistics.median(contexts):.1f} ms CPU (each client built two before); {load()}"
    )


if __name__ == "__main__":
    main()

"""Wiki parser time on hostile pages: nested ``<div>``s of 100 KB, 1 MB and 2 MB.

Run: uv run python benchmarks/bench_wiki_parser.py [--sizes 100000,1000000,2000000]

Prints (not asserts) the parse time of each page and the time per megabyte: the parse is
linear when the last column stays flat as the page grows. A 1.65 MB page of this shape hung the
old parser (quadratic); the real saved Fandom pages parse in milliseconds.
"""

from __future__ import annotations

import argparse
import sys
import time

from personae.tools.wiki_parser import parse_wiki_html


def nested_page(size: int) -> str:
    """About ``size`` bytes of nested divs, each holding one word, with a section at the bottom."""
    depth = max(1, size // 15)
    return (
        '<div class="mw-parser-output"><p>Lead.</p>'
        + "<div>word " * depth
        + "<h2>Bottom</h2><p>end</p>"
        + "</div>" * depth
        + "</div>"
    )


def main() -> None:
    """Time the parser on each requested size."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--sizes", default="100000,1000000,2000000")
    args = parser.parse_args()
    print(f"{'page bytes':>12} {'depth':>8} {'seconds':>8} {'s per MB':>9}")
    for size in (int(part) for part in args.sizes.split(",")):
        html = nested_page(size)
        started = time.perf_counter()
        page = parse_wiki_html(html)
        elapsed = time.perf_counter() - started
        assert "end" in page.text()
        depth = html.count("<div>")
        print(f"{len(html):>12,} {depth:>8,} {elapsed:>8.2f} {elapsed / len(html) * 1e6:>9.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

"""How fast the CLI answers ``--help``, ``--version`` and an argument error, and what it loads.

Each case runs ``python -m personae.cli`` in a fresh interpreter several times and prints the
median wall time, then lists which heavy libraries (LangGraph, LangChain, OpenAI, Chroma, ...)
the same invocation imported. The goal is under half a second with no heavy library loaded:
command modules import them inside their handlers. For scale it also prints a bare
interpreter's start and the import time of the heavy libraries alone (what every invocation
paid when command modules imported them at their top).

    uv run python benchmarks/bench_cli_startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

HEAVY = (
    "langgraph",
    "langchain_core",
    "langchain_openai",
    "openai",
    "chromadb",
    "tavily",
    "httpx",
    "pydantic",
    "numpy",
    "bs4",
    "rich",
)
"""Top-level packages a fast ``--help`` must not import."""

CASES = (
    ("--help", ["--help"]),
    ("--version", ["--version"]),
    ("profile --help", ["profile", "--help"]),
    ("argument error", ["profile", "--max-rounds", "x"]),
)

PROBE = """
import sys
from personae.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
print("HEAVY:" + ",".join(heavy), file=sys.stderr)
"""


def heavy_modules(argv: list[str]) -> list[str]:
    """Heavy top-level packages imported by one CLI invocation (run in a fresh interpreter)."""
    code = f"HEAVY = {HEAVY!r}\n{PROBE}"
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=False
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("HEAVY:"))
    return [name for name in line.removeprefix("HEAVY:").split(",") if name]


def wall_time(argv: list[str], repeat: int) -> float:
    """Median seconds of ``python -m personae.cli ARGV`` over ``repeat`` fresh processes."""
    return wall_time_of(["-m", "personae.cli", *argv], repeat)


def wall_time_of(python_argv: list[str], repeat: int) -> float:
    """Median seconds of ``python PYTHON_ARGV`` over ``repeat`` fresh processes."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, *python_argv], capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Print one line per case: median time and the heavy modules imported."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    bare = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=False)
        bare.append(time.perf_counter() - start)
    print(f"bare interpreter start: {statistics.median(bare):.3f} s")
    heavy_import = wall_time_of(
        ["-c", "import langgraph.graph, langchain_openai, chromadb"], args.repeat
    )
    print(f"importing LangGraph, LangChain-OpenAI and Chroma alone: {heavy_import:.3f} s")
    for label, argv in CASES:
        seconds = wall_time(argv, args.repeat)
        heavy = heavy_modules(argv)
        verdict = "ok" if seconds < 0.5 and not heavy else "SLOW"
        print(
            f"personae {label:<16} {seconds:.3f} s (median of {args.repeat}); "
            f"heavy modules: {', '.join(heavy) or 'none'}  [{verdict}]"
        )


if __name__ == "__main__":
    main()

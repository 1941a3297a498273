"""How fast the CLI answers ``--help``, ``--version`` and an argument error, and what it loads.

Each case runs ``python -m personae.cli`` in a fresh interpreter several times and prints the
median wall time, then lists which heavy libraries (LangGraph, LangChain, OpenAI, Chroma, ...)
the same invocation imported. The goal is under half a second with no heavy library loaded:
command modules import them inside their handlers. For scale it also prints a bare
interpreter's start and the import time of the heavy libraries alone (what every invocation
paid when command modules imported them at their top).

    uv run python benchmarks/bench_cli_startup.py [--repeat 5]

It also prints the CPU time of ``personae --help`` with ``PYTHONDONTWRITEBYTECODE=1`` (an
install that cannot write ``.pyc`` files next to the modules: every start compiled every module
it imports unless the installer compiled them, ``uv sync --compile-bytecode``) beside
the same command allowed to write them, and how many installed modules have no ``.pyc``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

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


def cpu_time_of(python_argv: list[str], repeat: int, *, write_bytecode: bool) -> float:
    """Median CPU seconds (user + system) of ``python PYTHON_ARGV`` over fresh processes."""
    env = dict(os.environ)
    if write_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    times = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, *python_argv], capture_output=True, check=False, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(times)


def uncompiled_modules() -> tuple[int, int]:
    """(modules without a current ``.pyc``, modules) under site-packages and the package."""
    import importlib.util
    import sysconfig

    import personae

    roots = [Path(sysconfig.get_paths()["purelib"]), Path(personae.__file__).resolve().parents[1]]
    missing = total = 0
    for root in roots:
        for source in root.rglob("*.py"):
            if ".venv" in source.relative_to(root).parts:
                continue
            total += 1
            missing += not Path(importlib.util.cache_from_source(str(source))).is_file()
    return missing, total


def bytecode_report(repeat: int) -> None:
    """``personae --help`` CPU without and with ``.pyc`` writing, and the modules left bare."""
    bare = cpu_time_of(["-c", "pass"], repeat, write_bytecode=False)
    help_ = ["-m", "personae.cli", "--help"]
    without = cpu_time_of(help_, repeat, write_bytecode=False)
    cpu_time_of(help_, 1, write_bytecode=True)  # writes what the installer did not
    cached = cpu_time_of(help_, repeat, write_bytecode=True)
    missing, total = uncompiled_modules()
    print(
        f"personae --help CPU (median of {repeat}): PYTHONDONTWRITEBYTECODE=1 {without * 1e3:.0f} "
        f"ms, with .pyc written {cached * 1e3:.0f} ms ({without / cached:.2f}x; bare interpreter "
        f"{bare * 1e3:.0f} ms); modules without .pyc after the run: {missing} of {total}"
    )


def main() -> None:
    """Print one line per case: median time and the heavy modules imported."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--bytecode", action="store_true", help="only the PYTHONDONTWRITEBYTECODE=1 comparison"
    )
    args = parser.parse_args()
    if args.bytecode:
        bytecode_report(args.repeat)
        return
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

"""Flag values are checked before any heavy import: a typo costs one line, not a minute.

Run in a fresh interpreter so "before" is observable: after the error, LangChain, LangGraph,
Chroma and OpenAI must not be in ``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("langchain_core", "langgraph", "chromadb", "openai", "httpx")
PROBE = """
import json, sys
from personae.cli import main
code = main(sys.argv[1:])
heavy = [m for m in {heavy!r} if m in sys.modules]
print(json.dumps({{"code": code, "heavy": heavy}}))
"""

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["profile", "Kyon", "--temperature", "abc"], "temperature 'abc' is not a number"),
        (["profile", "Kyon", "--top-p", "3"], "top_p 3.0 is outside 0.0-1.0"),
        (["profile", "Kyon", "--base-url", "ftp://x"], "--base-url 'ftp://x' is not an http(s)"),
        (["profile", "Kyon", "--wiki", "not a url"], "the wiki URL 'not a url' is not an http(s)"),
        (["profile", "Kyon", "--wiki", "http://[::1"], "the wiki URL 'http://[::1' is not an"),
        (["profile", "Kyon", "--wiki", "http://w.org:99999"], "is not an http(s) URL"),
        (
            ["bookmarks", "act", "s.json", "--character", "K", "--at", "1", "--temperature", "x"],
            "not a number",
        ),
        (["bookmarks", "fetch", "--endpoint", "ftp://hub"], "--endpoint 'ftp://hub'"),
    ],
)
def test_bad_flag_values_fail_before_the_heavy_imports(argv: list[str], problem: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 2, done.stderr
    assert done.stderr.count("\n") == 1 and problem in done.stderr, done.stderr
    assert result["heavy"] == [], f"imported before the check: {result['heavy']}"

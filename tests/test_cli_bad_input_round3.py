"""Issue 27's bad-input table: every command, one line, exit 2, nothing written, no traceback.

Each case builds its inputs in a fresh folder and gives an argv (and the environment it sets).
The run happens in an empty working directory; afterwards no file exists that the case did not
make, except under the case's ``out`` folder. The comment on a case says what it did before
when it was not already one line and exit 2.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cli_errors import assert_one_line_error

from personae.cli import main

BAD_URLS = {
    "unclosed IPv6": "http://[::1",
    "port out of range": "http://h:99999",
    "ftp": "ftp://mirror",
    "no host": "http://",
}


@dataclass(frozen=True)
class Case:
    """One bad input: the argv it runs, the environment it sets, the message it must give."""

    argv: Callable[[Path], list[str]]
    problem: str
    env: dict[str, str] = field(default_factory=dict)


def profile_json(folder: Path) -> Path:
    path = folder / "profile.json"
    profile = {"character": "Kenshiro", "profile": "I am Kenshiro.", "dimensions": {}}
    path.write_text(json.dumps(profile), encoding="utf-8")
    return path


def storyline(folder: Path) -> Path:
    path = folder / "story.jsonl"
    path.write_text(json.dumps({"action": "Kyon sighs.", "character": "Kyon"}) + "\n")
    return path


def batch(folder: Path) -> Path:
    path = folder / "chars.csv"
    path.write_text("name,franchise\nKenshiro,Hokuto\n", encoding="utf-8")
    return path


def url_cases() -> dict[str, Case]:
    """Issue 27.3: every URL a user gives goes through one checker (tracebacks before)."""
    cases: dict[str, Case] = {}
    for label, url in BAD_URLS.items():
        shown = re.escape(url)
        cases |= {
            f"persona index {label}": Case(  # ValueError: Invalid IPv6 URL
                lambda f, u=url: ["persona", "index", u + "/wiki/X", "--memory", str(f / "out")],
                rf"the persona source '{shown}/wiki/X' is not an http\(s\) URL",
            ),
            f"chat source {label}": Case(
                lambda f, u=url: ["chat", u + "/wiki/X", "--memory", str(f / "out")],
                rf"the persona source '{shown}/wiki/X' is not an http\(s\) URL",
            ),
            f"doctor --wiki {label}": Case(  # ValueError: Invalid IPv6 URL
                lambda f, u=url: ["doctor", "--wiki", u], rf"the wiki URL '{shown}' is not"
            ),
            f"eval profile --reference {label}": Case(
                lambda f, u=url: ["eval", "profile", str(profile_json(f)), "--reference", u],
                rf"--reference '{shown}' is not an http\(s\) URL",
            ),
            f"profile --batch --server {label}": Case(  # httpx InvalidURL traceback
                lambda f, u=url: [
                    *["profile", "--batch", str(batch(f)), "--server", u],
                    *["--out", str(f / "out")],
                ],
                rf"--server '{shown}' is not an http\(s\) URL",
            ),
            f"bench --server {label}": Case(
                lambda f, u=url: [
                    *["bench", "bookmarks", str(storyline(f)), "--server", u],
                    *["--out", str(f / "out")],
                ],
                rf"--server '{shown}' is not an http\(s\) URL",
            ),
            f"eval arcane --server {label}": Case(
                lambda f, u=url: [
                    *["eval", "arcane", "book", "--server", u, "--data", str(f)],
                    *["--out", str(f / "out")],
                ],
                rf"--server '{shown}' is not an http\(s\) URL",
            ),
            f"profile --exclude-url {label}": Case(  # tried the network 5 times before
                lambda f, u=url: [
                    *["profile", "Kenshiro", "--wiki", "https://w.org", "--exclude-url", u],
                    *["--out", str(f / "out")],
                ],
                rf"--exclude-url '{shown}' is not an http\(s\) URL",
            ),
            f"mcp --wiki {label}": Case(
                lambda f, u=url: ["mcp", "--wiki", u], rf"the wiki URL '{shown}' is not"
            ),
        }
    return cases


CASES: dict[str, Case] = {**url_cases()}


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case = CASES[name]
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    monkeypatch.setenv("PERSONAE_CACHE_DIR", str(tmp_path / "out" / "cache"))
    for variable, value in case.env.items():
        monkeypatch.setenv(variable, value)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    argv = case.argv(tmp_path)
    before = files_under(tmp_path)
    capsys.readouterr()
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, case.problem)
    written = files_under(tmp_path) - before
    assert {p for p in written if not p.is_relative_to(tmp_path / "out")} == set()


def test_a_references_pipe_is_read(tmp_path: Path) -> None:
    """Issue 27: ``eval profile --references <(printf ...)`` refused the pipe."""
    import os
    import threading

    from personae.commands.characterhub.eval_profile import read_references

    pipe = tmp_path / "refs.csv"
    os.mkfifo(pipe)

    def write() -> None:
        with pipe.open("w", encoding="utf-8") as handle:
            handle.write("character,reference\nToki,https://hokuto.fandom.com/wiki/Toki\n")

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        assert read_references(pipe) == {"toki": "https://hokuto.fandom.com/wiki/Toki"}
    finally:
        if writer.is_alive():  # refused unread: open the reading end so the writer ends
            os.close(os.open(pipe, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(timeout=10)


def test_no_message_quotes_a_name_before_its_possessive() -> None:
    """Issue 27: ``f"{name!r}'s"`` printed ``'Raoh''s profile``."""
    root = Path(__file__).resolve().parents[1]
    found = [
        f"{path.relative_to(root)}:{number}"
        for folder in ("personae", "agents", "tools", "memory", "graphs", "evals")
        for path in sorted((root / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"!r\}'s\b", line)
    ]
    assert found == []

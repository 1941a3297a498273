"""The Getting started tour, run as the page writes it, on the sample data of a fresh copy.

Why read the commands from the page: a tour that a test only imitates can drift from what a
reader types. The blocks of ``docs/getting-started.md`` marked as run by this test are parsed,
and each ``uv run personae ...`` line runs in process (``personae.cli.main``) in a folder
holding nothing but a copy of ``examples/data`` (what a fresh clone has), against the loopback
model: the sample world's scripted answers behind an OpenAI-compatible server on 127.0.0.1,
reached through ``OPENAI_BASE_URL`` and ``PERSONAE_MODEL`` as a reader reaches a local server
(``sample_world.sample_llm``), so the project's OpenAI client runs every call. The sample wiki
line starts :class:`MediaWikiSite` on a free port, and the later lines reach it there instead
of the page's port.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from sample_world import SAMPLE_MODEL, copy_samples, run_personae, sample_llm, sample_wiki

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "getting-started.md"
MARKER = "<!-- run: tests/test_tour.py::test_getting_started_tour -->"
WIKI_LINE = "uv run python -m personae.sample_wiki "


def tour_lines(page: Path = PAGE) -> list[str]:
    """The command lines of the page's blocks marked as run by this test, in page order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    commands, taking, after_marker = [], False, False
    for line in lines:
        if line.strip() == MARKER:
            after_marker = True
        elif after_marker and line.startswith("```"):
            taking, after_marker = True, False
        elif taking and line.startswith("```"):
            taking = False
        elif taking and line.strip() and not line.lstrip().startswith("#"):
            commands.append(line.strip())
    return commands


def test_the_tour_page_names_every_capability() -> None:
    lines = tour_lines()
    assert lines[0].startswith(WIKI_LINE)
    verbs = [shlex.split(line)[3] for line in lines[1:]]
    assert verbs == ["profile", "chat", "bookmarks", "bookmarks", "arcane", "arcane", "arcane"]
    assert all(line.startswith("uv run personae ") for line in lines[1:])


def test_getting_started_tour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    copy_samples(tmp_path)
    monkeypatch.chdir(tmp_path)
    wiki, *commands = tour_lines()
    printed: list[str] = []
    with sample_wiki(wiki) as (meant, served), sample_llm(monkeypatch) as llm:
        for line in commands:
            code = run_personae(line.replace(meant, served))
            captured = capsys.readouterr()
            assert code == 0, f"{line}\nexit {code}: {captured.err.strip()}"
            printed.append(captured.out)
    profile = tmp_path / "profiles" / "mara-vell--the-keeper-of-gull-rock"
    document = json.loads((profile / "profile.json").read_text(encoding="utf-8"))
    assert document["character"] == "Mara Vell"
    cited = {source["url"] for source in document["sources"]}
    assert any(url.endswith("/wiki/Mara_Vell") for url in cited)  # the page is its evidence
    assert (profile / "card.json").is_file() and (profile / "profile.md").is_file()
    assert (tmp_path / "personas").is_dir()
    positions = printed[2]
    assert "Mara climbs the tower alone and lights the lamp." in positions
    assert "Tobias" not in positions.replace("Tobias's", "")  # only Mara's own actions
    assert "Step:" in printed[3] and "LLM calls" in printed[3]  # the BOOKMARKS step
    novel = tmp_path / "data" / "novels" / "the_keeper_of_gull_rock"
    chapters = (novel / "chapters.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(chapters) == 5
    assert "Mara:" in printed[5] and (novel / "arcs").is_dir()
    assert printed[6].strip()  # Mara's answer as of chapter 3
    assert {request["model"] for request in llm.requests} == {SAMPLE_MODEL}  # the settings' model


PYTHON_MARKER = "<!-- run: tests/test_tour.py::test_python_tour -->"


def python_block(page: Path = PAGE) -> str:
    """The page's Python block marked as run by :func:`test_python_tour`."""
    text = page.read_text(encoding="utf-8")
    after = text.split(PYTHON_MARKER, 1)[1]
    return after.split("```python\n", 1)[1].split("\n```", 1)[0]


def test_python_tour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = python_block()
    assert "from personae import" in code and "personae." not in code  # the public API only
    copy_samples(tmp_path)
    monkeypatch.chdir(tmp_path)
    wiki = tour_lines()[0]
    with sample_wiki(wiki) as (meant, served), sample_llm(monkeypatch) as llm:
        exec(compile(code.replace(meant, served), "getting-started.md", "exec"), {})  # noqa: S102
    printed = capsys.readouterr().out.splitlines()
    path, calls, *_ = printed[0].rsplit(" ", 3)
    assert path == "profiles/mara-vell--the-keeper-of-gull-rock/profile.json"
    assert 0 < int(calls) < len(llm.requests)  # the profile's calls, then the chat's
    assert (tmp_path / "personas").is_dir()
    assert printed[-1].strip()  # Mara's answer

"""Errors Personae recovers from are logged: quiet by default, shown by ``personae -v``."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookmarks_world import scripted_model_as, write_storyline

from personae.cli import main
from personae.memory.bookmarks.storyline import open_storyline
from personae.memory.chroma import safe_collection_name
from personae.tools.http import PoliteHttpClient


@pytest.fixture(autouse=True)
def _personae_logger_restored() -> Iterator[None]:
    logger = logging.getLogger("personae")
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


def test_a_damaged_cache_entry_is_logged_and_refetched(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    client = PoliteHttpClient(user_agent="test", cache_dir=tmp_path)
    key = "ab" * 32
    path = tmp_path / "http" / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="personae"):
        assert client._read_cache(key) is None
    assert [r.name for r in caplog.records] == ["personae.tools.http"]
    assert "HTTP cache entry unreadable, fetching again" in caplog.records[0].getMessage()


def _damaged_unknown_list(story: Path, memory: Path) -> None:
    name = safe_collection_name(open_storyline(story).scope, prefix="unknown-")
    memory.mkdir(parents=True)
    (memory / f"{name}.json").write_text("[1, 2", encoding="utf-8")


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "-v"])
def test_the_cli_shows_recovered_errors_only_with_v(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], verbose: bool
) -> None:
    story, memory = write_storyline(tmp_path / "club.jsonl"), tmp_path / "mem"
    _damaged_unknown_list(story, memory)
    argv = [
        "bookmarks",
        "act",
        str(story),
        "--character",
        "Haruhi",
        "--at",
        "40",
        "--memory",
        str(memory),
    ]
    with scripted_model_as("t"):
        code = main([*argv, "--model", "openai:t", *(["-v"] if verbose else [])])
    err = capsys.readouterr().err
    assert code == 0, err
    estimate = [line for line in err.splitlines() if line.startswith("personae: estimated: ")]
    assert len(estimate) == 1  # act's estimate, before the step
    err = err.replace(estimate[0] + "\n", "")
    shown = "personae: INFO: personae.graphs.bookmarks.resources: unknown-questions file unreadable"
    assert (shown in err) is verbose
    if not verbose:
        assert err == ""
    assert "Traceback" not in err

"""Unusable output, memory and cache folders fail at once: one line, exit 2, no model call."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bookmarks_world import write_storyline

from personae.cli import main
from personae.errors import InputError
from personae.files import check_writable_dir

# A model spec that resolves offline; calling it would fail (no network), so reaching the
# model at all would show up as another error than the one asserted.
MODEL = ["--model", "openai:gpt-4.1-mini"]


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A folder nobody may write to (``/sys`` when running as root, which ignores modes)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if not _writable(folder):
            yield folder
        elif Path("/sys").is_dir() and not _writable(Path("/sys")):
            yield Path("/sys")
        else:
            pytest.skip("no read-only folder available")
    finally:
        folder.chmod(0o755)


def _writable(path: Path) -> bool:
    try:
        check_writable_dir(path, "probe")
    except InputError:
        return False
    return True


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("x")
    return path


def test_profile_out_that_is_a_file(a_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "Kenshiro", "--out", str(a_file), *MODEL]) == 2
    assert one_error_line(capsys) == (
        f"personae: error: --out {a_file} is not a folder; pass a folder you can write to as --out"
    )


def test_profile_out_under_a_file(a_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = a_file / "profiles"
    assert main(["profile", "Kenshiro", "--out", str(out), *MODEL]) == 2
    assert f"--out {out} is not a folder ({a_file} is a file)" in one_error_line(capsys)


def test_profile_out_read_only(read_only: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = read_only / "profiles"
    assert main(["profile", "Kenshiro", "--out", str(out), *MODEL]) == 2
    assert f"--out {out} is not writable (" in one_error_line(capsys)


def test_missing_folders_are_fine_and_not_created_by_the_check(tmp_path: Path) -> None:
    check_writable_dir(tmp_path / "a" / "b" / "profiles", "--out")
    assert list(tmp_path.iterdir()) == []


def test_cache_dir_that_is_a_file(
    a_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PERSONAE_CACHE_DIR", str(a_file / "cache"))
    assert main(["profile", "Kenshiro", "--out", str(tmp_path / "p"), *MODEL]) == 2
    assert one_error_line(capsys).endswith(
        f"PERSONAE_CACHE_DIR {a_file / 'cache'} is not a folder ({a_file} is a file); "
        "set PERSONAE_CACHE_DIR to a folder you can write to"
    )


def test_act_memory_that_is_a_file(
    a_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    code = main(
        [
            "bookmarks",
            "act",
            str(story),
            "--character",
            "Haruhi",
            "--at",
            "40",
            "--memory",
            str(a_file),
            *MODEL,
        ]
    )
    assert code == 2
    assert f"--memory {a_file} is not a folder" in one_error_line(capsys)


def test_bench_memory_read_only(
    read_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    argv = ["bookmarks", "bench", str(story), "--out", str(tmp_path / "run")]
    assert main([*argv, "--memory", str(read_only / "mem"), *MODEL]) == 2
    assert f"--memory {read_only / 'mem'} is not writable" in one_error_line(capsys)
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_eval_out_in_a_read_only_folder(
    read_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "profile.json"
    profile.write_text('{"character": "Toki", "profile": "I am Toki.", "sources": []}')
    argv = ["characterhub", "eval", str(profile), "--reference", str(tmp_path / "toki.html")]
    assert main([*argv, "--out", str(read_only / "report.json"), *MODEL]) == 2
    assert f"--out {read_only} is not writable" in one_error_line(capsys)


def test_data_dest_that_is_a_file(a_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bookmarks", "fetch", "--dest", str(a_file)]) == 2
    assert f"--dest {a_file} is not a folder" in one_error_line(capsys)

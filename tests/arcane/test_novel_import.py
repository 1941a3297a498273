"""Novel import: cleaning and chapter segmentation on a synthetic novel and the shared books."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from arcane_world import imported_novel, novel_text, write_novel_file

from personae.cli import main
from personae.errors import InputError
from personae.memory.arcane.novel_store import open_novel
from personae.tools.arcane.novel_text import join_drop_cap, segment_novel


def test_synthetic_novel_is_cleaned_and_numbered_globally(tmp_path: Path) -> None:
    novel = imported_novel(tmp_path)
    assert novel.count == 6
    labels = [label for _, label, _ in novel.labels()]
    assert labels[0] == "BOOK THE FIRST — Chapter 1" and labels[3] == "BOOK THE SECOND — Chapter 1"
    first = novel.chapter(1).text
    assert first.startswith("It was Ada walked")
    every = "\n".join(novel.chapter(i).text for i in range(1, 7))
    for banned in ("E - B o o k s", "E b d", "Introduction", "editorial note", "CONTENTS"):
        assert banned not in every
    assert "MARK6" in novel.chapter(6).text and "MARK5" not in novel.chapter(6).text


def test_drop_cap_keeps_real_one_letter_words() -> None:
    assert join_drop_cap("“ G oodday!” said he") == "“Goodday!” said he"
    assert join_drop_cap("A wonderful fact") == "A wonderful fact"
    assert join_drop_cap("I was there") == "I was there"
    # a paragraph-initial "A dog" is two words, whatever our list of common words (issue 26 §12)
    assert join_drop_cap("A dog barked at the gate.") == "A dog barked at the gate."
    assert join_drop_cap("A cat sat.") == "A cat sat."
    assert join_drop_cap("O ne morning") == "One morning"
    assert join_drop_cap("A nd so it was") == "And so it was"


def test_bad_pattern_and_missing_marker_are_input_errors() -> None:
    with pytest.raises(InputError, match="not a regular expression"):
        segment_novel(novel_text(), chapter_pattern="Chapter (")
    with pytest.raises(InputError, match="no chapters found"):
        segment_novel(novel_text(), chapter_pattern=r"Kapitel (\d+)")
    with pytest.raises(InputError, match="start marker"):
        segment_novel(novel_text(), start_marker="NOT THERE")


def test_cli_import_and_chapters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_novel_file(tmp_path)
    data = tmp_path / "data"
    assert main(["arcane", "import", str(source), "--title", "The River", "--data", str(data)]) == 0
    assert main(["arcane", "chapters", "the_river", "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "6 chapters" in out and "BOOK THE SECOND — Chapter 3" in out
    assert open_novel(data, "The River").count == 6


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["arcane", "chapters", "nope"], "unknown book 'nope'"),
        (["arcane", "import", "missing.txt"], "does not exist"),
        (["arcane", "import", "BOOK", "--chapter-pattern", "Kapitel (\\d+)"], "no chapters found"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    source = write_novel_file(tmp_path)
    data = tmp_path / "data"
    argv = [str(source) if a == "BOOK" else a for a in argv]
    assert main([*argv, "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not data.exists()


def _coser(shared_dir: Path) -> Path:
    return shared_dir / "data" / "coser" / "src" / "books_example.jsonl"


def _record(shared_dir: Path, title: str) -> str:
    for line in _coser(shared_dir).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["title"] == title:
            return str(record["content"])
    raise AssertionError(title)


def test_pride_and_prejudice_has_61_chapters(shared_dir: Path) -> None:
    seg = segment_novel(_record(shared_dir, "Pride and Prejudice"))
    assert len(seg.chapters) == 61
    assert seg.chapters[32].label == "Chapter 33"
    text = "\n".join(c.text for c in seg.chapters)
    assert "E - B o o k s" not in text and "More classics" not in text and "page-1" not in text
    assert seg.chapters[0].text.startswith("It is a truth universally acknowledged")


def test_tale_of_two_cities_has_45_chapters_in_three_books(shared_dir: Path) -> None:
    seg = segment_novel(_record(shared_dir, "A Tale of Two Cities"))
    assert len(seg.chapters) == 45
    books = [c.label.split(" — ")[0] for c in seg.chapters]
    assert [books.count(b) for b in ("BOOK THE FIRST", "BOOK THE SECOND", "BOOK THE THIRD")] == [
        6,
        24,
        15,
    ]
    assert seg.chapters[0].label == "BOOK THE FIRST — CHAPTER 1 — The Period"
    assert seg.chapters[0].text.startswith("It was the best of times")
    assert seg.chapters[-1].text.endswith("than I have ever known.”")
    text = "\n".join(c.text for c in seg.chapters)
    assert "ENDNOTES" not in text and "Comments & Questions" not in text and "![" not in text


def test_plays_segment_into_scenes(shared_dir: Path) -> None:
    assert len(segment_novel(_record(shared_dir, "Othello")).chapters) == 15
    lear = segment_novel(
        _record(shared_dir, "King Lear"), start_marker="Original Text", end_marker="Modern Version"
    )
    assert len(lear.chapters) == 26
    assert "Modern Version" not in "".join(c.text for c in lear.chapters)

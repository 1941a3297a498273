"""Issue 17's bad inputs through the CLI: each is one line naming the problem and the fix,
exit 2 (bad input or configuration), no traceback, nothing half-written.

Every case here printed a traceback before: the function that builds it says what it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_errors import assert_one_line_error

from personae.cli import main
from personae.tools.arcane import novel_text

KENSHIRO_PROFILE = {
    "character": "Kenshiro",
    "profile": "I am Kenshiro.",
    "canon": "Follow the original manga.",
    "dimensions": {"identity": [{"text": "I am the 64th successor.", "source_ids": ["S1"]}]},
}
NOVEL = "\n\n".join(
    f"CHAPTER {n}\n\n"
    + " ".join(f"Elizabeth walks in chapter {n}, sentence {i}." for i in range(60))
    for n in (1, 2, 3)
)


def profile_json(folder: Path, **changes: object) -> Path:
    path = folder / "profile.json"
    path.write_text(json.dumps({**KENSHIRO_PROFILE, **changes}), encoding="utf-8")
    return path


def persona_wrong_dimensions(folder: Path) -> list[str]:
    path = profile_json(folder, dimensions=[1, 2])
    return ["amadeus", "index", str(path), "--memory", str(folder / "m")]


def persona_wrong_facts(folder: Path) -> list[str]:
    path = profile_json(folder, dimensions={"identity": [5, None]})
    return ["amadeus", "index", str(path), "--memory", str(folder / "m")]


def persona_wrong_prose(folder: Path) -> list[str]:
    path = profile_json(folder, profile=["I am", "Kenshiro"])
    return ["amadeus", "index", str(path), "--memory", str(folder / "m")]


def questionnaire(folder: Path, content: object) -> list[str]:
    path = folder / "quiz.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    return ["amadeus", "eval-personality", "--questionnaire", str(path), "--character", "Haruhi"]


def quiz_questions_as_list(folder: Path) -> list[str]:
    return questionnaire(folder, {"questions": [1, 2], "range": [1, 7]})


def quiz_item_without_dimension(folder: Path) -> list[str]:
    return questionnaire(folder, {"questions": {"1": {"category": 5}}, "range": [1, 7]})


def quiz_bad_range(folder: Path) -> list[str]:
    item = {"dimension": "E/I", "category": "E"}
    return questionnaire(folder, {"questions": {"1": item}, "range": "1-7"})


def novel_data_is_a_file(folder: Path) -> list[str]:
    book = folder / "book.txt"
    book.write_text(NOVEL, encoding="utf-8")
    data = folder / "data"
    data.write_text("not a folder")
    return ["arcane", "import", str(book), "--title", "Book", "--data", str(data)]


def imported(folder: Path) -> Path:
    book, data = folder / "book.txt", folder / "data"
    book.write_text(NOVEL, encoding="utf-8")
    assert main(["arcane", "import", str(book), "--title", "Book", "--data", str(data)]) == 0
    return data / "novels" / "book"


def corrupt_chapters(folder: Path) -> list[str]:
    novel = imported(folder)
    (novel / "chapters.jsonl").write_text('{"idx": "one", "label": 3}\n', encoding="utf-8")
    return ["arcane", "chapters", "Book", "--data", str(folder / "data")]


def corrupt_meta(folder: Path) -> list[str]:
    novel = imported(folder)
    meta = json.loads((novel / "meta.json").read_text(encoding="utf-8"))
    (novel / "meta.json").write_text(json.dumps({**meta, "chars": "many"}), encoding="utf-8")
    return ["arcane", "chapters", "Book", "--data", str(folder / "data")]


def meta_not_json(folder: Path) -> list[str]:
    novel = imported(folder)
    (novel / "meta.json").write_text("{torn", encoding="utf-8")
    return ["arcane", "chapters", "Book", "--data", str(folder / "data")]


def arcane_result_missing_a_key(folder: Path) -> list[str]:
    record = {"probe_id": "p1", "novel": "book", "character": "Eliza", "model": "openai:m"}
    (folder / "results.jsonl").write_text(json.dumps({**record, "mode": "arc"}) + "\n")
    return ["arcane", "eval-report", str(folder)]


def batch_is_a_folder(folder: Path) -> list[str]:
    (folder / "chars.csv").mkdir()
    return ["profile", "--batch", str(folder / "chars.csv"), "--out", str(folder / "out")]


def batch_with_an_unbalanced_quote(folder: Path) -> list[str]:
    path = folder / "chars.csv"
    path.write_text('name,franchise\n"Kyon,Haruhi\nMikuru,Haruhi\n', encoding="utf-8")
    return ["profile", "--batch", str(path), "--out", str(folder / "out")]


def batch_with_a_bad_wiki_cell(folder: Path) -> list[str]:
    path = folder / "chars.csv"
    path.write_text("name,franchise,wiki\nKyon,Haruhi,http://[::1\n", encoding="utf-8")
    return ["profile", "--batch", str(path), "--out", str(folder / "out")]


def storyline_with_non_names(folder: Path) -> list[str]:
    path = folder / "story.jsonl"
    row = {"action": "They meet.", "characters": ["Kyon", 5, None, {}]}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return ["bookmarks", "act", str(path), "--character", "Kyon", "--at", "1"]


def catastrophic_chapter_pattern(folder: Path) -> list[str]:
    book = folder / "book.txt"
    book.write_text("a" * 40 + "!", encoding="utf-8")
    return ["arcane", "import", str(book), "--chapter-pattern", "(a|aa)+$", "--data", str(folder)]


def unclosed_wiki_address(folder: Path) -> list[str]:
    return ["profile", "Kenshiro", "--wiki", "http://[::1", "--out", str(folder)]


def ftp_base_url(folder: Path) -> list[str]:
    return ["profile", "Kenshiro", "--wiki", "https://w.org", "--base-url", "ftp://x"]


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (persona_wrong_dimensions, r"profile.json: 'dimensions' is not an object"),
        (persona_wrong_facts, r"profile.json: dimension 'identity' is not a list of facts"),
        (persona_wrong_prose, r"profile.json: 'profile' is not text"),
        (quiz_questions_as_list, r"quiz.json has no 'questions' object"),
        (quiz_item_without_dimension, r"quiz.json has a question 1 without a text 'dimension'"),
        (quiz_bad_range, r"quiz.json has no 'range' of two whole numbers"),
        (novel_data_is_a_file, r"--data .*data is a file, not a folder"),
        (corrupt_chapters, r"chapters.jsonl: chapter 1 is damaged"),
        (corrupt_meta, r"meta.json is damaged"),
        (meta_not_json, r"meta.json is not valid JSON"),
        (
            arcane_result_missing_a_key,
            r"results.jsonl: result 1 \(p1\) lacks the text field 'probe_type'",
        ),
        (batch_is_a_folder, r"batch file .*chars.csv is a folder, not a file"),
        (batch_with_an_unbalanced_quote, r"chars.csv is not a readable CSV file"),
        (batch_with_a_bad_wiki_cell, r"chars.csv:2: the wiki URL 'http://\[::1' is not an http"),
        (storyline_with_non_names, r"story.jsonl:1 lists a character that is not a name \('5'\)"),
        (catastrophic_chapter_pattern, r"--chapter-pattern '\(a\|aa\)\+\$' took over 0.5 s"),
        (unclosed_wiki_address, r"the wiki URL 'http://\[::1' is not an http\(s\) URL"),
        (ftp_base_url, r"--base-url 'ftp://x' is not an http\(s\) URL"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    make: Callable[[Path], list[str]],
    problem: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    monkeypatch.setenv("PERSONAE_CACHE_DIR", str(tmp_path / "cache"))
    # The pattern's time limit (10 s) shortened: the limit, not its length, is under test.
    monkeypatch.setattr(novel_text, "PATTERN_SECONDS", 0.5)
    argv = make(tmp_path)
    capsys.readouterr()
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, problem)


def test_a_character_name_with_dots_indexes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--character ../../x`` made a collection name Chroma refuses (two periods in a row)."""
    persona = tmp_path / "x.md"
    persona.write_text("# X\n\n## Story\n\nX walks to school and sighs at the hill.\n")
    memory = tmp_path / "m"
    argv = ["amadeus", "index", str(persona), "--character", "../../x", "--memory", str(memory)]
    assert main(argv) == 0
    assert "../../x: 1 chunks" in capsys.readouterr().out
    assert not (tmp_path.parent / "x").exists()  # a name, never a path


def test_the_canon_rule_is_not_indexed_as_knowledge(tmp_path: Path) -> None:
    from personae.tools.amadeus.persona_import import load_persona_file

    path = profile_json(tmp_path)
    doc = load_persona_file(str(path), None)
    assert [s.path for s in doc.sections] == [("Profile",), ("Identity",)]
    assert "original manga" not in json.dumps([s.paragraphs for s in doc.sections])


def test_a_huge_one_section_persona_is_capped_with_a_notice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    persona = tmp_path / "kyon.md"
    persona.write_text("# Kyon\n\n## Story\n\n" + "Kyon sighs at the hill. " * 500_000)  # 12 MB
    memory = tmp_path / "m"
    assert main(["amadeus", "index", str(persona), "--memory", str(memory), "--json"]) == 0
    captured = capsys.readouterr()
    stats = json.loads(captured.out)
    assert stats["l_max"] <= 200_000 and stats["chunks"] == 1
    assert (
        "personae: notice: the section 'Story' of " in captured.err
        and "is 11,999,999 characters; indexed its first 199,996 (the section cap)" in captured.err
    ), captured.err


def test_batch_wiki_flag_pins_the_rows_without_a_wiki(tmp_path: Path) -> None:
    from personae import read_character_list

    path = tmp_path / "chars.csv"
    path.write_text("name,franchise,wiki\nKenshiro,Hokuto,\nRaoh,Hokuto,https://r.org\n")
    rows = read_character_list(path, default_wiki="https://hokuto.fandom.com")
    assert [row.wiki for row in rows] == ["https://hokuto.fandom.com", "https://r.org"]

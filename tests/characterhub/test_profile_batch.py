"""Batch de-duplication: the paper's rule literally, ours by default, both on the known traps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from personae import CharacterRow, read_character_list
from personae.errors import InputError
from personae.memory.characterhub.character_list import read_aliases
from personae.memory.characterhub.dedup import (
    NamedRow,
    deduplicate,
    fold_word,
    paper_duplicates,
    personae_duplicates,
)

ROOT = Path(__file__).parents[2]


def test_similar_names_of_one_franchise_are_dropped_as_duplicates() -> None:
    hokuto = "Fist of the North Star"
    rows = [
        CharacterRow("Kenshiro", hokuto),
        CharacterRow("Raoh", hokuto),
        CharacterRow("Kenshirō", "fist of the north star"),
        CharacterRow("Kenshiro", "Kenshiro Remake"),
        CharacterRow("Toki"),
        CharacterRow("toki", ""),
    ]
    kept, dropped = deduplicate(rows)
    assert kept == [rows[0], rows[1], rows[3], rows[4], rows[5]]  # no franchise: never by name
    assert dropped == [(rows[2], rows[0])]
    by_folder, _ = deduplicate(rows, key=lambda r: r.name.casefold())
    assert rows[5] not in by_folder  # one output folder is one character whatever the rule


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            NamedRow("Satoru Gojo", "Jujutsu Kaisen", "anilist"),
            NamedRow("Gojo Satoru", "Jujutsu Kaisen", "mal"),
        ),
        (NamedRow("Rin Tosaka", "Fate", "anilist"), NamedRow("Rin Tohsaka", "Fate", "mal")),
        (NamedRow("Itadori Yuuji", "JJK", "a"), NamedRow("Yuji Itadori", "JJK", "b")),
        (NamedRow("Hatake Kakasi", "Naruto", "a"), NamedRow("Kakashi Hatake", "Naruto", "a")),
    ],
)
def test_ours_merges_reordered_names_and_romanisation_variants(a: NamedRow, b: NamedRow) -> None:
    assert personae_duplicates(a, b)


def test_the_paper_rule_misses_the_reordered_name_it_cites() -> None:
    gojo = NamedRow("Satoru Gojo", "Jujutsu Kaisen", "anilist")
    assert not paper_duplicates(gojo, NamedRow("Gojo Satoru", "Jujutsu Kaisen", "mal"))


@pytest.mark.parametrize(
    ("first", "second"),
    [("Yui Hirasawa", "Ui Hirasawa"), ("Gon Freecss", "Ging Freecss"), ("Maki Zenin", "Mai Zenin")],
)
def test_relatives_sharing_a_family_name_are_never_merged_by_ours(first: str, second: str) -> None:
    a, b = NamedRow(first, "F", "anilist"), NamedRow(second, "F", "mal")
    assert not personae_duplicates(a, b)
    assert paper_duplicates(a, b)  # the paper's rule merges them across sources


def test_paper_rule_conditions_literally() -> None:
    ken = NamedRow("Kenshiro", "Hokuto", "anilist")
    assert paper_duplicates(ken, NamedRow("Kenshirou", "Hokuto", "mal"))  # 0.94 > 0.85
    assert not paper_duplicates(ken, NamedRow("Kenshirou", "Hokuto", "anilist"))  # same source
    assert paper_duplicates(ken, NamedRow("Kenshirou", "HOKUTO", "mal"))  # case aside, exact
    assert not paper_duplicates(ken, NamedRow("Kenshirou", None, "mal"))  # no franchise
    assert not paper_duplicates(NamedRow("Kenshiro", None), NamedRow("Kenshiro", None))
    # Strictly above 0.85: 17 of 20 letters in common is exactly 0.85, not enough.
    assert not paper_duplicates(
        NamedRow("abcdefghijklmnopqrst", "F", "x"), NamedRow("abcdefghijklmnopqXYZ", "F", "y")
    )
    zero = NamedRow("Saber", "Fate/Zero", "mal")
    stay = NamedRow("Saber", "Fate/stay night", "anilist")
    assert not paper_duplicates(zero, stay)
    assert paper_duplicates(zero, stay, {"Fate/Zero": "Fate/stay night"})


def test_romanisation_folds_to_one_spelling() -> None:
    assert fold_word("kenshirou") == fold_word("kenshiro")
    assert fold_word("tohsaka") == fold_word("tosaka")
    assert fold_word("shinji") == fold_word("sinzi")
    assert fold_word("tsunade") == fold_word("tunade")


def test_batch_rule_and_aliases_are_chosen_by_the_caller(tmp_path: Path) -> None:
    csv_file = tmp_path / "chars.csv"
    csv_file.write_text(
        "name,franchise,source\n"
        "Maki Zenin,Jujutsu Kaisen,anilist\n"
        "Mai Zenin,Jujutsu Kaisen,mal\n"
        "Gojo Satoru,Jujutsu Kaisen,mal\n"
        "Satoru Gojo,Jujutsu Kaisen,anilist\n"
        "Saber,Fate/Zero,mal\n"
        "Saber,Fate/stay night,anilist\n",
        encoding="utf-8",
    )
    aliases_file = tmp_path / "aliases.csv"
    aliases_file.write_text("alias,franchise\nFate/Zero,Fate/stay night\n", encoding="utf-8")
    rows = read_character_list(csv_file)
    assert rows[0].source == "anilist"
    aliases = read_aliases(aliases_file)
    ours, ours_dropped = deduplicate(rows, aliases=aliases)
    paper, paper_dropped = deduplicate(rows, rule="paper", aliases=aliases)
    assert [d.name for d, _ in ours_dropped] == ["Satoru Gojo", "Saber"]
    assert [d.name for d, _ in paper_dropped] == ["Mai Zenin", "Saber"]
    with pytest.raises(InputError, match="lacks the columns alias,franchise"):
        read_aliases(csv_file)


@pytest.mark.slow  # runs the benchmark script in a second Python process
def test_benchmark_prints_precision_and_recall_of_both_rules() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_dedup.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.splitlines()[0].startswith("48 labelled pairs")
    assert "   paper: precision" in out and "personae: precision 1.000" in out

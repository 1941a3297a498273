"""ACTS / ATS / fixed splitting: the paper's arithmetic on real persona documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from personae.errors import InputError
from personae.memory.amadeus.persona_chunks import hierarchical_context, split_persona, split_text
from personae.memory.amadeus.persona_doc import PersonaDoc, parse_markdown
from personae.tools.amadeus.persona_import import load_persona_file


@pytest.fixture
def toki(shared_dir: Path) -> PersonaDoc:
    return load_persona_file(str(shared_dir / "fixtures/wiki/hokuto_toki_2020.html"), None)


@pytest.fixture
def iago(shared_dir: Path) -> PersonaDoc:
    return load_persona_file(str(shared_dir / "data/coser/final/Othello.json"), "Iago")


@pytest.mark.parametrize("name", ["toki", "iago"])
def test_acts_sizes_chunks_by_the_longest_paragraph(
    name: str, request: pytest.FixtureRequest
) -> None:
    doc: PersonaDoc = request.getfixturevalue(name)
    l_max = max(len(p) for p in doc.paragraphs)
    chunks = split_persona(doc, "acts")
    assert {c.l_max for c in chunks} == {l_max} and {c.l_o for c in chunks} == {l_max // 2}
    assert all(len(c.raw) <= l_max for c in chunks)
    assert any(len(c.raw) == l_max for c in chunks)  # the longest paragraph is one chunk
    by_path = {s.path: s for s in doc.sections}
    for chunk in chunks:
        section = by_path[chunk.path]
        assert section.text[chunk.start : chunk.start + len(chunk.raw)] == chunk.raw  # no crossing
        assert chunk.text == f"{chunk.raw}\n{hierarchical_context(doc.character, chunk.path)}"
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert [c.id for c in split_persona(doc, "acts")] == [c.id for c in chunks]  # deterministic


def test_l_max_and_l_o_match_hand_counts_on_the_shared_sources(
    toki: PersonaDoc, iago: PersonaDoc, shared_dir: Path
) -> None:
    """Eq. 3: l_max counted from the raw sources, not through the importer."""
    import json

    book = json.loads((shared_dir / "data/coser/final/Othello.json").read_text(encoding="utf-8"))
    raw = book["character_datasets"]["Iago"]
    texts = [p for p in raw["profile"].split("\n\n") if p.strip()]
    texts += [plot["experience"] for plot in raw["plots"]]
    texts += [talk["motivation"] for talk in raw["conversations"]]
    assert max(len(t.strip()) for t in texts) == 584  # the third profile paragraph
    chunks = split_persona(iago, "acts")
    assert (chunks[0].l_max, chunks[0].l_o) == (584, 292)
    # The Fandom page: its longest paragraph (976 characters) is one whole chunk of its section.
    chunks = split_persona(toki, "acts")
    assert (chunks[0].l_max, chunks[0].l_o) == (976, 488)
    longest = [c for c in chunks if len(c.raw) == 976]
    assert [c.path for c in longest] == [("History", "The Hokuto Shinken Succession Dispute")]
    assert longest[0].raw.startswith("Kenshiro rescues Toki from the prison stronghold")


def test_context_string_names_the_exact_heading_path(toki: PersonaDoc) -> None:
    chunks = split_persona(toki, "acts")
    early = [c for c in chunks if c.path == ("History", "Early Life")]
    assert early and early[0].text.endswith("\n[Context: Toki > History > Early Life]")


def test_ats_has_no_context_and_fixed_ignores_the_document(iago: PersonaDoc) -> None:
    acts, ats = split_persona(iago, "acts"), split_persona(iago, "ats")
    assert [c.raw for c in ats] == [c.raw for c in acts]
    assert all(c.text == c.raw and "[Context:" not in c.text for c in ats)
    fixed = split_persona(iago, "fixed")
    assert {(c.l_max, c.l_o) for c in fixed} == {(1000, 200)}
    assert all(len(c.raw) <= 1000 for c in fixed)
    assert len({c.id for c in acts} & {c.id for c in ats}) == 0  # one id space per splitter


def test_adjacent_chunks_of_a_section_overlap_by_at_most_l_o() -> None:
    long = "L" * 99 + "."
    shorts = "\n\n".join(f"Fact number {i:02d} here." for i in range(12))  # 23 chars each
    doc = parse_markdown(f"# X\n\n## A\n\n{long}\n\n## B\n\n{shorts}\n", "X")
    chunks = [c for c in split_persona(doc, "acts") if c.path == ("B",)]
    assert len(chunks) >= 3
    for first, second in zip(chunks, chunks[1:], strict=False):
        head, tail = second.raw.split("\n\n")[0], first.raw.split("\n\n")[-1]
        assert head in first.raw and tail in second.raw  # the overlap carries paragraphs forward
        carried = len(first.raw) - first.raw.index(head)
        assert 0 < carried <= 50  # at most l_o = 100 // 2
        assert len(first.raw) <= 100


def test_recursive_splitter_falls_back_to_sentences_then_words() -> None:
    text = "One two three. Four five six. Seven eight nine ten eleven twelve."
    pieces = split_text(text, 20, 0)
    assert all(len(p) <= 20 for p in pieces)
    assert " ".join(pieces).replace(".", "").split() == text.replace(".", "").split()


def test_empty_persona_and_persona_without_paragraphs_are_refused() -> None:
    with pytest.raises(InputError, match="is empty"):
        parse_markdown("  \n", "X", source="x.md")
    with pytest.raises(InputError, match="has no paragraphs"):
        parse_markdown("# X\n\n## A\n\n## B\n", "X", source="x.md")


def test_max_chunk_chars_caps_l_max_and_long_chunks_are_warned(
    iago: PersonaDoc, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from personae.cli import main

    capped = split_persona(iago, "acts", max_chunk_chars=200)
    assert {(c.l_max, c.l_o) for c in capped} == {(200, 100)} and all(
        len(c.raw) <= 200 for c in capped
    )
    long = tmp_path / "long.md"
    long.write_text("# X\n\n## A\n\n" + "word " * 500 + "\n")
    memory = ["--memory", str(tmp_path / "mem")]
    assert main(["amadeus", "index", str(long), "--character", "X", *memory]) == 0
    assert "may exceed an embedder's input limit" in capsys.readouterr().err
    assert (
        main(
            [
                "amadeus",
                "index",
                str(long),
                "--character",
                "X",
                "--max-chunk-chars",
                "1000",
                *memory,
            ]
        )
        == 0
    )
    assert capsys.readouterr().err == ""


def test_vanilla_splits_the_whole_document_across_headings() -> None:
    """Table 1's Vanilla ignores the hierarchy: a fixed-size chunk runs over section boundaries."""
    doc = parse_markdown(
        "# X\n\n## Activity\n\n### Act I\n\n"
        + "a" * 300
        + "\n\n### Act II\n\n"
        + "b" * 300
        + "\n\n## Belief\n\n"
        + "c" * 200
        + "\n",
        "X",
    )
    assert len(doc.sections) == 3
    fixed = split_persona(doc, "fixed")
    assert len(fixed) == 1  # per-section splitting gave 3 chunks, one per leaf section
    assert "### Act II" in fixed[0].raw and "a" * 300 in fixed[0].raw and "c" * 200 in fixed[0].raw
    assert fixed[0].text == fixed[0].raw and "[Context:" not in fixed[0].text
    assert fixed[0].path == ("Activity", "Act I")  # the section it starts in, shown only
    small = split_persona(doc, "fixed", fixed_size=400, fixed_overlap=100)
    assert any("a" * 300 in c.raw and "### Act II" in c.raw for c in small)  # across a heading
    assert {c.path for c in small} >= {("Activity", "Act I"), ("Belief",)}

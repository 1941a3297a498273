"""The wiki parser on real saved Fandom pages (../shared) and on project-owned fixtures."""

from __future__ import annotations

import re
import threading
from functools import cache
from pathlib import Path

import pytest

from personae.tools import wiki_parser
from personae.tools.wiki_page import WikiPage
from personae.tools.wiki_parser import MAX_DEPTH, disambiguation_candidates, parse_wiki_html

FIXTURES = Path(__file__).parent / "fixtures"


@cache
def parsed(path: Path) -> WikiPage:
    return parse_wiki_html(path.read_text(encoding="utf-8"), url=f"https://x/{path.stem}")


def assert_clean(page: WikiPage) -> None:
    body = page.text()
    assert not re.search(r"\[\d+\]", body), "citation marks left in text"
    assert "[edit]" not in body and "Edit section" not in body
    assert "[ ]" not in "".join(s.heading for s in page.sections)


# --- project-owned fixtures (always run) -------------------------------------------------


def test_portable_infobox_fields_groups_and_values() -> None:
    page = parsed(FIXTURES / "kenshiro_fragment.html")
    rows = {row.label: row for row in page.infobox}
    assert rows["Name in Kanji"].value == "ケンシロウ"
    assert rows["Name in Kanji"].source == "kanji"
    assert rows["Name in Kanji"].group == "Personal information"
    assert rows["Family"].value == "Raoh (older brother); Toki (older brother)"  # br split, no [1]
    assert rows["Fighting style"].value == "Hokuto Shinken; Musō Tensei"  # list items joined
    assert rows["Fighting style"].group == "Martial arts"
    assert rows["weapon"].value == "Bare hands"  # no label: falls back to data-source
    assert page.infobox_dict()["Family"].startswith("Raoh")


def test_infobox_headers_do_not_become_sections_and_noise_is_gone() -> None:
    page = parsed(FIXTURES / "kenshiro_fragment.html")
    assert [(s.heading, s.level) for s in page.sections] == [
        ("", 1),
        ("Personality", 2),
        ("Abilities", 2),
        ("Hokuto Shinken", 3),
        ("Relationships", 2),
        ("References", 2),
    ]
    assert page.sections[0].text.startswith(
        "Kenshiro (ケンシロウ) is the protagonist of Fist of the North Star"
    )
    personality = page.section("personality")
    assert personality is not None
    assert personality.text == (
        "Kenshiro is stoic and quiet, but shows deep compassion for orphans and the oppressed."
    )
    relationships = page.section("Relationships")
    assert relationships is not None
    assert relationships.text.splitlines() == [
        "Yuria: his fiancée and the love of his life.",
        "Bat: a young thief who becomes his companion.",
    ]
    body = page.text()
    for gone in (
        "Personal information",
        "Contents",
        "Gallery caption",
        "Raoh · Toki · Jagi",
        "anime film",
    ):
        assert gone not in body
    assert_clean(page)
    assert not page.is_disambiguation


def test_legacy_table_infobox_full_page() -> None:
    page = parsed(FIXTURES / "raoh_legacy_page.html")
    assert page.title == "Raoh"
    assert page.infobox_dict() == {
        "Name in Kanji": "ラオウ",
        "Title": "Ken-oh (King of Fists)",
        "Steed": "Kokuoh",
    }
    groups = {row.label: row.group for row in page.infobox}
    assert groups == {"Name in Kanji": None, "Title": "Affiliations", "Steed": "Affiliations"}
    assert [s.heading for s in page.sections] == ["", "History", "Trivia"]
    assert "eldest of the four Hokuto brothers" in page.sections[0].text
    assert "[2]" not in page.sections[0].text
    assert "adslot" not in page.text()  # scripts dropped


def test_disambiguation_detected_with_candidates() -> None:
    html = (FIXTURES / "ken_disambiguation_fragment.html").read_text(encoding="utf-8")
    page = parse_wiki_html(html, title="Ken")
    assert page.is_disambiguation and page.title == "Ken"
    candidates = disambiguation_candidates(html)
    assert [c.title for c in candidates] == ["Kenshiro", "Ken Masters", "Ken (Pokémon)"]
    assert "Fist of the North Star" in candidates[0].description
    # the text cue alone is enough when the wiki has no disambiguation template
    plain = parse_wiki_html("<p><b>Toki</b> may refer to:</p><ul><li>Toki</li></ul>")
    assert plain.is_disambiguation
    assert not parsed(FIXTURES / "raoh_legacy_page.html").is_disambiguation


# --- real saved pages from ../shared (skip when absent) ----------------------------------


def test_hokuto_toki_classic_infobox(shared_dir: Path) -> None:
    page = parsed(shared_dir / "fixtures/wiki/hokuto_toki_2020.html")
    assert page.title == "Toki"
    box = page.infobox_dict()
    assert box["Name in Kanji"] == "トキ"
    assert box["Fighting Style"] == "Hokuto Shin Ken (Jū no Ken)"
    assert box["Allegiance(s)"] == "Kenshiro"
    family = box["Family"].split("; ")
    assert family[:3] == ["Ryuou (ancestor)", "Hahaja (unnamed mother)", "Kaioh (older brother)"]
    assert "Ryu (nephew)" in family
    assert box["Voice actor(s)"].startswith("Takaya Hashi; ")
    headings = [(s.heading, s.level) for s in page.sections]
    assert [h for h, level in headings if level == 2] == [
        "History",
        "Toki Gaiden",
        "Character Rating",
        "Fighting Style",
        "Trivia",
        "Gallery",
    ]
    assert ("Early Life", 3) in headings and ("Village of Miracles", 3) in headings
    assert "Contents" not in [h for h, _ in headings]
    lead = page.sections[0]
    assert lead.level == 1 and "second of the four Hokuto" in lead.text
    rating = page.section("Character Rating")
    assert rating is not None and "Level: AAA" in rating.text
    assert_clean(page)


def test_wookieepedia_portable_infobox(shared_dir: Path) -> None:
    page = parsed(shared_dir / "fixtures/wiki/wookieepedia_Force_Collector_2022.html")
    assert page.title == "Force Collector"
    rows = {row.source: row for row in page.infobox}
    assert rows["author"].value == "Kevin Shinick" and rows["author"].label == "Author(s)"
    assert rows["author"].group == "Attribution information"
    assert rows["cover artist"].value == "Tony Foti (Illustration); Leigh Zieske (Design)"
    assert rows["pages"].value == "384" and rows["isbn"].value == "9781405295413"
    assert rows["release date"].value == "October 4, 2019 (UK); November 19, 2019 (US)"
    assert rows["series"].group == "Chronology"
    headings = [s.heading for s in page.sections]
    for infobox_header in (
        "Attribution information",
        "Publication information",
        "Chronology",
        "Force Collector",
    ):
        assert infobox_header not in headings
    assert headings[:4] == ["", "Publisher's summary", "Plot summary", "The misfit"]
    assert "Notes and references" in headings and "External links" in headings
    misfit = page.section("The misfit")
    assert misfit is not None and misfit.level == 3
    assert misfit.text.startswith("Karr Nuq Sin is a 17-year old Force-sensitive teenager")
    assert "Perhaps the archives are incomplete" not in page.text()  # maintenance box dropped
    assert_clean(page)


def test_genshin_list_page_without_infobox(shared_dir: Path) -> None:
    page = parsed(shared_dir / "fixtures/wiki/genshin_Character_List_2022.html")
    assert page.title == "Character List"
    assert page.infobox == ()
    assert not page.is_disambiguation
    headings = [(s.heading, s.level) for s in page.sections]
    assert ("Playable Characters", 2) in headings
    assert ("Characters by Element", 2) in headings and ("Anemo", 3) in headings
    anemo = page.section("Anemo")
    assert anemo is not None and "Jean" in anemo.text
    assert "Contents" not in [h for h, _ in headings]


def test_portable_infobox_parser_test_expected_html(shared_dir: Path) -> None:
    text = (shared_dir / "fixtures/wiki/portableinfobox_character_parsertest.txt").read_text(
        encoding="utf-8"
    )
    blocks = re.findall(r"!! html/parsoid\n(.*?)\n!! end", text, flags=re.S)
    assert len(blocks) >= 2
    plain, formatted = (parse_wiki_html(block) for block in blocks[:2])
    for page in (plain, formatted):
        assert [(r.source, r.label, r.value, r.group) for r in page.infobox] == [
            ("birthDate", "Date of birth", "January 22, 2026", "Biographical information"),
            ("birthPlace", "Place of birth", "United Kingdom", "Biographical information"),
            ("species", "Species", "Human", "Physical description"),
        ]
        assert page.sections == ()


# --- hostile pages ------------------------------------------------------------------------


def nested_divs(depth: int) -> str:
    """A page of ``depth`` nested ``<div>``s, a word in each, and a section at the bottom."""
    return (
        '<div class="mw-parser-output"><p>Lead line.</p>'
        + "<div>w " * depth
        + "<h2>Deep</h2><p>bottom</p>"
        + "</div>" * depth
        + "</div>"
    )


@pytest.mark.endtoend
def test_deeply_nested_page_parses_without_hanging_and_keeps_its_text() -> None:
    # 60,000 levels (600 KB): the old parser walked to the deepest element for every
    # newline it appended (quadratic: minutes); this one reads it in well under a second.
    # The deadline only catches a hang; the timing figures live in benchmarks/bench_wiki_parser.py.
    depth = 60_000
    result: list[WikiPage] = []
    worker = threading.Thread(target=lambda: result.append(parse_wiki_html(nested_divs(depth))))
    worker.start()
    worker.join(timeout=60)
    assert result, "parsing a page of nested divs did not finish in 60 s"
    text = result[0].text()
    assert text.count("w") >= depth  # every nested word kept, nothing lost past the depth bound
    assert "Lead line." in text and "bottom" in text


def test_nesting_below_the_depth_bound_is_read_as_plain_text() -> None:
    shallow = parse_wiki_html(nested_divs(MAX_DEPTH // 2))
    assert [s.heading for s in shallow.sections] == ["", "Deep"]
    deep = parse_wiki_html(nested_divs(MAX_DEPTH * 2))
    assert [s.heading for s in deep.sections] == [""]  # past the bound: text, not structure
    assert "Deep" in deep.text() and "bottom" in deep.text()


async def test_async_parse_runs_off_the_event_loop() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def spy(html: str, *, url: str = "", title: str | None = None) -> WikiPage:
        seen.append(threading.get_ident())
        return parse_wiki_html(html, url=url, title=title)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wiki_parser, "parse_wiki_html", spy)
        page = await wiki_parser.parse_wiki_html_async("<p>Hello there.</p>", url="https://x/p")
    assert page.text() == "Hello there." and page.url == "https://x/p"
    assert seen and seen[0] != loop_thread

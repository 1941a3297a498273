"""Reference pages (file, JSON, wiki URL) normalised and chunked for knowledge extraction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_web import FakeMediaWiki, FakeWeb
from profile_eval_world import FIXTURE, REFERENCE_URL

from personae.errors import InputError, RemoteError
from personae.evals.characterhub.profile_metrics import count_tokens
from personae.evals.characterhub.profile_reference import (
    ProfileReference,
    ReferenceSection,
    chunk_reference,
    load_reference,
    read_reference_file,
)
from personae.loopback import LoopbackWebServer, free_port
from personae.settings import load_settings
from personae.tools.wiki import wiki_article


def test_saved_page_becomes_normalised_json_without_apparatus() -> None:
    reference = read_reference_file(FIXTURE)
    assert reference.model_dump() == {
        "title": "Toki",
        "url": REFERENCE_URL,  # from <link rel="canonical">
        "infobox": {"Fighting Style": "Hokuto Shinken", "Family": "Raoh (older brother)"},
        "sections": [
            {"heading": "", "level": 1, "text": "Toki is the second of the four Hokuto brothers."},
            {"heading": "Appearance", "level": 2, "text": "Toki has long white hair."},
            {"heading": "History", "level": 2, "text": ""},
            {
                "heading": "Nuclear War",
                "level": 3,
                "text": "Toki was exposed to nuclear fallout while shielding Kenshiro and Yuria.",
            },
            {"heading": "Personality", "level": 2, "text": "Toki is gentle and compassionate."},
        ],
    }


def test_chunks_have_code_ids_heading_paths_and_skip_empty_sections() -> None:
    chunks = chunk_reference(read_reference_file(FIXTURE))
    assert [(c.id, c.heading) for c in chunks] == [
        ("C1", "Infobox"),
        ("C2", "Introduction"),
        ("C3", "Appearance"),
        ("C4", "History > Nuclear War"),
        ("C5", "Personality"),
    ]
    assert chunks[0].text == "Fighting Style: Hokuto Shinken\nFamily: Raoh (older brother)"


def test_long_sections_are_cut_under_the_token_limit_without_losing_words() -> None:
    long_text = " ".join(f"Toki heals village number {i}." for i in range(200))
    reference = ProfileReference(
        title="Toki",
        sections=[
            ReferenceSection(heading="History", level=2, text=long_text),
            ReferenceSection(heading="Trivia", level=2, text="x" * 2000),  # one huge "word"
        ],
    )
    chunks = chunk_reference(reference, max_tokens=120)
    history = [c for c in chunks if c.heading == "History"]
    assert len(history) > 5
    assert all(count_tokens(c.text) <= 120 for c in history)
    assert " ".join(c.text for c in history).split() == long_text.split()
    assert [c.id for c in chunks] == [f"C{i}" for i in range(1, len(chunks) + 1)]
    trivia = [c.text for c in chunks if c.heading == "Trivia"]
    assert "".join(trivia) == "x" * 2000 and len(trivia) > 1  # one long "word" is cut too


def test_real_fandom_page_from_shared_fixtures(shared_dir: Path) -> None:
    reference = read_reference_file(shared_dir / "fixtures" / "wiki" / "hokuto_toki_2020.html")
    assert reference.title == "Toki"
    assert reference.url == "https://hokuto.fandom.com/wiki/Toki"
    assert reference.infobox["Fighting Style"] == "Hokuto Shin Ken (Jū no Ken)"
    assert "Gallery" not in [s.heading for s in reference.sections]
    chunks = chunk_reference(reference, max_tokens=300)
    headings = [c.heading for c in chunks]
    assert "History > Early Life" in headings
    assert "History > The Hokuto Shinken Succession Dispute" in headings
    assert all(count_tokens(c.text) <= 300 for c in chunks)
    assert any("Land of Asura" in c.text for c in chunks)


def test_normalised_json_reference_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "toki.json"
    path.write_text(read_reference_file(FIXTURE).model_dump_json(), encoding="utf-8")
    assert read_reference_file(path) == read_reference_file(FIXTURE)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.html", None, "does not exist"),
        ("toki.txt", "Toki", "neither .html nor .json"),
        ("broken.json", "{not json", "is not valid JSON"),
        ("other.json", json.dumps({"sections": []}), r"is not a normalised reference \(title"),
        ("empty.json", json.dumps({"title": "Toki", "sections": []}), "has no content"),
        ("empty.html", "<html><body><div id='mw-content-text'></div></body></html>", "no content"),
        (
            "ken.html",
            "<html><body><div id='mw-content-text'><p>Ken may refer to:</p>"
            "<ul><li>Kenshiro</li></ul></div></body></html>",
            "disambiguation page",
        ),
    ],
)
def test_bad_reference_files_give_one_line_errors(
    tmp_path: Path, name: str, content: str | None, message: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message) as caught:
        read_reference_file(path)
    assert "\n" not in str(caught.value)
    assert "pass a wiki article URL" in str(caught.value) or "write {title" in str(caught.value)


def test_wiki_article_urls_are_split_into_root_and_title() -> None:
    assert wiki_article("https://hokuto.fandom.com/wiki/Toki_(Hokuto)") == (
        "https://hokuto.fandom.com",
        "Toki (Hokuto)",
    )
    assert wiki_article("https://en.wikipedia.org/wiki/Ra%C5%8Dh") == (
        "https://en.wikipedia.org",
        "Raōh",
    )
    assert wiki_article("https://example.org/characters/toki") is None


async def test_wiki_url_is_fetched_through_the_mediawiki_api() -> None:
    wiki = FakeMediaWiki({"Toki": FIXTURE.read_text(encoding="utf-8")})
    with LoopbackWebServer(FakeWeb(wiki=wiki).route) as server:
        url = f"{server.url}/wiki/Toki"
        reference = await load_reference(url, settings=load_settings())
        paths = [r.path for r in server.requests]
    assert reference.url == url
    assert reference.infobox["Family"] == "Raoh (older brother)"
    assert reference.sections[-1].text == "Toki is gentle and compassionate."
    assert "/api.php" in paths and "/wiki/Toki" not in paths
    assert any(call.get("action") == "parse" for call in wiki.calls)


async def test_site_without_api_is_fetched_as_html() -> None:
    web = FakeWeb(pages={"/wiki/Toki": FIXTURE.read_text(encoding="utf-8")})
    with LoopbackWebServer(web.route) as server:
        reference = await load_reference(f"{server.url}/wiki/Toki", settings=load_settings())
    assert reference.title == "Toki"
    assert reference.infobox["Fighting Style"] == "Hokuto Shinken"


async def test_missing_wiki_page_is_an_input_error() -> None:
    wiki = FakeMediaWiki({"Toki": FIXTURE.read_text(encoding="utf-8")})
    with LoopbackWebServer(FakeWeb(wiki=wiki).route) as server:
        with pytest.raises(InputError, match="reference page .*/wiki/Jagi does not exist"):
            await load_reference(f"{server.url}/wiki/Jagi", settings=load_settings())
    with LoopbackWebServer(FakeWeb().route) as server:
        with pytest.raises(InputError, match=r"does not exist \(HTTP 404\)"):
            await load_reference(f"{server.url}/characters/jagi", settings=load_settings())


async def test_unreachable_reference_is_a_remote_error() -> None:
    port = free_port()
    with pytest.raises(RemoteError, match="cannot fetch the reference") as caught:
        await load_reference(f"http://127.0.0.1:{port}/wiki/Toki", settings=load_settings())
    assert "\n" not in str(caught.value)

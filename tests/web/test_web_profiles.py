"""The Profiles view through Starlette's test client: what it shows, and what it refuses."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape
from profile_page_world import DROPPED_FACT, KEY, write_sample_profile
from starlette.routing import Route
from starlette.testclient import TestClient

from personae.web import app as web_app
from personae.web.app import create_app
from personae.web.markup import markdown_html
from personae.web.options import WebOptions
from personae.web.profile_files import ProfileShelf
from personae.web.render import render

BASE = "http://127.0.0.1:8765"
FILES = ("profile.json", "profile.md", "card.json")


def client_of(tmp_path: Path) -> TestClient:
    options = WebOptions(profiles_dir=tmp_path / "profiles", personas_dir=tmp_path / "personas")
    return TestClient(create_app(options), base_url=BASE)


def write_profile(folder: Path, document: dict[str, Any], name: str = "profile.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def alert(html: str) -> str:
    """The one-line message of an error page."""
    found = re.search(r'<p class="error" role="alert">(.*?)</p>', html, re.S)
    assert found, html
    return found.group(1).replace("&#39;", "'")


SAMPLE: dict[str, bytes] = {}
"""Mara Vell's files as the tour writes them: one profiler run for the module, made inside
the first test that needs them (so under that test's isolated settings)."""


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    folder = tmp_path / "profiles"
    if not SAMPLE:
        made = write_sample_profile(tmp_path / "sample").parent
        SAMPLE.update({name: (made / name).read_bytes() for name in FILES})
    (folder / KEY).mkdir(parents=True)
    for name, content in SAMPLE.items():
        (folder / KEY / name).write_bytes(content)
    return folder


def test_the_list_shows_name_franchise_facts_check_and_date(tmp_path: Path, profiles: Path) -> None:
    document = json.loads((profiles / KEY / "profile.json").read_text(encoding="utf-8"))
    facts = sum(len(items) for items in document["dimensions"].values())
    draft = {**document, "character": "Elias", "checked": False, "reason": "no fact survived"}
    write_profile(profiles / "elias--the-keeper-of-gull-rock", draft, "draft.json")
    unchecked = {**document, "character": "Tobias", "usage": {**document["usage"]}}
    unchecked["usage"]["facts_checked"] = 0  # --no-check-citations
    write_profile(profiles / "tobias", {**unchecked, "franchise": None})
    os.utime(profiles / "tobias" / "profile.json", (0, 86_400 * 365))
    page = client_of(tmp_path).get("/profiles")
    assert page.status_code == 200
    rows = re.findall(
        r"<tr>\s*<td><a href=\"/profiles/([^\"]+)\">(.*?)</a></td>(.*?)</tr>", page.text, re.S
    )
    cells = {
        key: [name, *re.findall(r"<td[^>]*>(.*?)</td>", rest, re.S)] for key, name, rest in rows
    }
    assert cells[KEY][:4] == ["Mara Vell", "The Keeper of Gull Rock", str(facts), "checked"]
    assert cells["elias--the-keeper-of-gull-rock"][3] == "draft"
    assert cells["tobias"][1:4] == ["", str(facts), "not checked"]
    assert cells["tobias"][4] == "<time>1971-01-01 00:00</time>"
    by_date = client_of(tmp_path).get("/profiles?sort=date&order=desc").text
    assert by_date.index("/profiles/tobias") > by_date.index(f"/profiles/{KEY}")  # oldest last
    assert client_of(tmp_path).get("/profiles?sort=facts").status_code == 200
    wrong = client_of(tmp_path).get("/profiles?sort=size")
    assert wrong.status_code == 400 and "no column 'size'" in alert(wrong.text)
    found = client_of(tmp_path).get("/profiles?q=TOBI").text
    assert "/profiles/tobias" in found and f"/profiles/{KEY}" not in found
    assert "No profile matches “nemo”" in client_of(tmp_path).get("/profiles?q=nemo").text
    beyond = client_of(tmp_path).get("/profiles?page=2")
    assert beyond.status_code == 400 and alert(beyond.text) == "no page '2' of 1; pass 1 to 1"


def test_a_long_list_is_paged_and_keeps_its_order_across_pages(tmp_path: Path) -> None:
    for n in range(105):
        document = {"character": f"Keeper {n:03d}", "dimensions": {"identity": [{}] * (n % 7)}}
        write_profile(tmp_path / "profiles" / f"keeper-{n:03d}", document)
    client = client_of(tmp_path)
    first = client.get("/profiles?sort=name&order=desc").text
    assert "1–100 of 105" in first and first.count('<td><a href="/profiles/keeper-') == 100
    assert first.index("keeper-104") < first.index("keeper-005")
    assert 'href="/profiles?sort=name&amp;order=desc&amp;page=2"' in first
    second = client.get("/profiles?sort=name&order=desc&page=2").text
    keys = re.findall(r'<td><a href="/profiles/(keeper-\d+)">', second)
    assert keys == ["keeper-004", "keeper-003", "keeper-002", "keeper-001", "keeper-000"]


def test_the_profile_page_shows_facts_with_their_sources_passages_and_verdicts(
    tmp_path: Path, profiles: Path
) -> None:
    document = json.loads((profiles / KEY / "profile.json").read_text(encoding="utf-8"))
    client = client_of(tmp_path)
    page = client.get(f"/profiles/{KEY}").text
    fact = document["dimensions"]["ability"][0]
    sources = {source["id"]: source for source in document["sources"]}
    item = page.split(str(escape(fact["text"])), 1)[1].split("</li>", 1)[0]
    for source_id in fact["source_ids"]:
        source = sources[source_id]
        assert f"<summary>{source_id}</summary>" in item
        assert f'<a href="{source["url"]}" rel="noopener noreferrer"' in item
        passage = source["content"].splitlines()[0]
        assert passage in item  # the evidence the check compared, behind the id
    assert '<span class="verdict supported">supported</span>' in item
    counts = re.sub(r"\s+", " ", page.split('<p class="counts">', 1)[1].split("</p>", 1)[0])
    kept = sum(len(items) for items in document["dimensions"].values())
    assert f"<strong>{kept}</strong> supported" in counts
    assert "<strong>0</strong> unchecked" in counts and "<strong>1</strong> dropped" in counts
    dropped = page.split(DROPPED_FACT, 1)[1].split("</li>", 1)[0]  # shown, with its verdict
    assert '<span class="verdict dropped">dropped</span>' in dropped
    assert "web search disabled by --no-web" in page  # the notice
    assert document["profile"] in page and "Character Card V3" in page
    card = client.get(f"/profiles/{KEY}/card.json")
    assert card.headers["content-disposition"] == f'attachment; filename="{KEY}.card.json"'
    assert card.json()["spec"] == "chara_card_v3"
    markdown = client.get(f"/profiles/{KEY}/profile.md")
    assert markdown.headers["content-type"].startswith("text/plain")
    assert markdown.text.startswith("# Mara Vell")


def test_unchecked_and_dropped_facts_are_shown_and_counted(tmp_path: Path, profiles: Path) -> None:
    path = profiles / KEY / "profile.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    doubtful = document["dimensions"]["ability"][0]
    document["unchecked_facts"] = [{"dimension": "ability", **doubtful}]
    document["unsupported_facts"] = [
        {"dimension": "personality", "text": "I fear the sea.", "source_ids": ["S3", "S99"]}
    ]
    document["sources"][0]["url"] = "javascript:alert(1)"
    document["profile"] = "I keep the <b>light</b>. [S1]"
    path.write_text(json.dumps(document), encoding="utf-8")
    page = client_of(tmp_path).get(f"/profiles/{KEY}").text
    counts = re.sub(r"\s+", " ", page.split('<p class="counts">', 1)[1].split("</p>", 1)[0])
    kept = sum(len(items) for items in document["dimensions"].values())
    assert f"<strong>{kept - 1}</strong> supported" in counts
    assert "<strong>1</strong> unchecked" in counts and "<strong>1</strong> dropped" in counts
    item = page.split(str(escape(doubtful["text"])), 1)[1].split("</li>", 1)[0]
    assert '<span class="verdict unchecked">unchecked</span>' in item
    dropped = page.split("I fear the sea.", 1)[1].split("</li>", 1)[0]
    assert '<span class="verdict dropped">dropped</span>' in dropped and "S99?" in dropped
    assert 'href="javascript:' not in page and "<code>javascript:alert(1)</code>" in page
    assert "I keep the &lt;b&gt;light&lt;/b&gt;." in page  # the prose is text, never markup
    assert '<a class="cite" href="#source-S1">S1</a>' in page


@pytest.mark.parametrize(
    "path",
    [
        "/profiles/nobody",
        "/profiles/mara..vell",
        "/profiles/%2E%2E",
        "/profiles/Mara_Vell",
        "/profiles/nobody/card.json",
        "/profiles/%2E%2E/card.json",
    ],
)
def test_a_key_that_names_no_profile_is_a_404_page_with_the_reason(
    tmp_path: Path, path: str
) -> None:
    (tmp_path / "profiles").mkdir()
    page = client_of(tmp_path).get(path)
    assert page.status_code == 404
    assert re.fullmatch(
        r"no profile '.*' in .*; pick one from the Profiles list.*", alert(page.text)
    )


def test_a_profile_linked_outside_the_folder_is_neither_listed_nor_served(
    tmp_path: Path, profiles: Path
) -> None:
    outside = tmp_path / "outside" / "secret"
    write_profile(outside, {"character": "Secret", "dimensions": {}})
    (outside / "card.json").write_text('{"secret": true}', encoding="utf-8")
    (profiles / "secret").symlink_to(outside, target_is_directory=True)
    (profiles / "linked").mkdir()
    (profiles / "linked" / "profile.json").symlink_to(outside / "profile.json")
    (profiles / KEY / "card.json").unlink()
    (profiles / KEY / "card.json").symlink_to(outside / "card.json")
    client = client_of(tmp_path)
    listing = client.get("/profiles").text
    assert "Secret" not in listing and "/profiles/linked" not in listing
    for path in ("/profiles/secret", "/profiles/linked", "/profiles/secret/card.json"):
        assert client.get(path).status_code == 404, path
    card = client.get(f"/profiles/{KEY}/card.json")
    assert card.status_code == 404 and "secret" not in card.text
    assert "Character Card V3" not in client.get(f"/profiles/{KEY}").text  # no link to it


def test_empty_and_unreadable_folders(tmp_path: Path) -> None:
    client = client_of(tmp_path)
    assert "No profile yet" in client.get("/profiles").text  # no folder at all
    assert not (tmp_path / "profiles").exists()  # and reading made none
    (tmp_path / "profiles" / "empty").mkdir(parents=True)
    (tmp_path / "profiles" / "broken").mkdir()
    (tmp_path / "profiles" / "broken" / "profile.json").write_text("{", encoding="utf-8")
    listing = client.get("/profiles").text
    assert "No profile yet" in listing
    assert "1 folder could not be read as a profile (broken)" in alert(listing)
    assert client.get("/profiles/empty").status_code == 404
    broken = client.get("/profiles/broken")
    assert broken.status_code == 404 and "is not readable JSON" in alert(broken.text)
    draft = {"character": "D", "checked": False, "reason": "r", "dimensions": {}}
    write_profile(tmp_path / "profiles" / "d", draft, "draft.json")
    missing = client.get("/profiles/d/card.json")
    assert missing.status_code == 404 and "has no card.json (a draft has none)" in alert(
        missing.text
    )
    other = client.get("/profiles/d/draft.json")
    assert other.status_code == 404 and "has no file 'draft.json'" in alert(other.text)


def test_the_list_rereads_only_a_changed_profile(tmp_path: Path, profiles: Path) -> None:
    shelf = ProfileShelf(profiles)
    first, _ = shelf.summaries()
    path = profiles / KEY / "profile.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    stamp = path.stat()
    path.write_text(json.dumps({**document, "character": "Renamed"}), encoding="utf-8")
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    same_size = len(json.dumps({**document, "character": "Renamed"})) == stamp.st_size
    again, _ = shelf.summaries()
    assert again[0].name == ("Mara Vell" if same_size else "Renamed")
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    assert shelf.summaries()[0][0].name == "Renamed"
    assert first[0].name == "Mara Vell"
    (path.parent / "profile.md").unlink()
    path.unlink()
    assert shelf.summaries() == ([], [])


def test_a_fixed_path_of_another_view_is_not_taken_for_a_profile_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class LaterView:  # a view listed after the profiles, whose path looks like a profile key
        routes = [
            Route(
                "/profiles/compare", lambda request: render(request, "error.html", message="form")
            )
        ]

    monkeypatch.setattr(web_app, "PAGE_MODULES", (*web_app.PAGE_MODULES, LaterView))
    page = client_of(tmp_path).get("/profiles/compare")
    assert page.status_code == 200 and alert(page.text) == "form"


def test_the_markdown_subset_escapes_everything_it_does_not_make() -> None:
    html = str(
        markdown_html(
            "# Mara\n\n> **Notice** \\(x\\_y\\)\n\nI <script>x</script> *keep* it [S1, S2]\n"
            "- [wiki](http://w.org/a?b=1&c=2)\n- [bad](javascript:alert(1)) `<i>`"
        )
    )
    assert html.splitlines()[0] == "<h3>Mara</h3>"
    assert "<blockquote><p><strong>Notice</strong> &#40;x&#95;y&#41;</p></blockquote>" in html
    assert "&lt;script&gt;x&lt;/script&gt; <em>keep</em>" in html
    assert (
        '[<a class="cite" href="#source-S1">S1</a>, <a class="cite" href="#source-S2">S2</a>]'
        in html
    )
    assert (
        '<li><a href="http://w.org/a?b=1&amp;c=2" rel="noopener noreferrer">wiki</a></li>' in html
    )
    assert "[bad](javascript:alert(1)) <code>&lt;i&gt;</code>" in html


def test_odd_fields_of_a_hand_edited_profile_degrade_to_text_not_errors(tmp_path: Path) -> None:
    folder = tmp_path / "profiles"
    document = {
        "character": "Odd",
        "dimensions": {"identity": [{"text": "I am odd.", "source_ids": ["S1"]}], "x": "no list"},
        "sources": [{"url": "http://a.example/"}, "not a source", {"id": "S1", "url": "ftp://b"}],
        "usage": {"facts_checked": 1, "results_dropped": 2},
        "models": {"rewrite": "openai:gpt-4.1"},
        "notices": ["one"],
    }
    write_profile(folder / "odd", document)
    write_profile(folder / "listed", [1, 2])  # type: ignore[arg-type]
    (folder / "dangling").mkdir()
    (folder / "dangling" / "profile.json").symlink_to(folder / "nowhere.json")
    client = client_of(tmp_path)
    page = client.get("/profiles/odd").text
    assert "I am odd." in page and "<dd>openai:gpt-4.1</dd>" in page
    assert "2 web search results dropped" in page  # usage.results_dropped, as profile.md says
    assert "<code>ftp://b</code>" in page and 'href="ftp:' not in page
    listing = client.get("/profiles").text
    assert "1 folder could not be read as a profile (listed)" in alert(listing)
    assert "/profiles/dangling" not in listing
    refused = client.get("/profiles/listed")
    assert refused.status_code == 404 and "is not a profile (not a JSON object)" in alert(
        refused.text
    )

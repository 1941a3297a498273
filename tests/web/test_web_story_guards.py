"""The arcs, storylines and reports views refuse what is not theirs, in one line each."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from web_story_world import CHARACTER, NOVEL, Story, prepare_story

from personae.errors import InputError
from personae.evals.bookmarks.report import REPORT_HTML, REPORT_MD
from personae.web.app import create_app
from personae.web.options import WebOptions
from personae.web.pages.reports import REPORT_NAMES, REPORT_POLICY, find_reports


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    return prepare_story(tmp_path_factory.mktemp("story"))


@pytest.fixture
def client(story: Story, tmp_path: Path) -> Iterator[TestClient]:
    runs = tmp_path / "runs"
    (runs / "bench").mkdir(parents=True)
    (runs / "bench" / "report.md").write_text(
        "# Bench\n\n| method | score |\n|---|---|\n| bookmarks | 0.61 |\n\n"
        "Quoted: <script>alert(1)</script> [click](javascript:alert(1))\n",
        encoding="utf-8",
    )
    (runs / "bench" / "report.html").write_text("<h1>Bench</h1>", encoding="utf-8")
    (runs / "bench" / "notes.md").write_text("not a report", encoding="utf-8")
    (runs / ".checkpoints").mkdir()
    (runs / ".checkpoints" / "report.md").write_text("hidden", encoding="utf-8")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "report.md").write_text("outside", encoding="utf-8")
    (runs / "linked").mkdir()
    (runs / "linked" / "report.md").symlink_to(tmp_path / "secret" / "report.md")
    options = WebOptions(
        data_dir=story.data_dir,
        storylines=(story.storyline,),
        bookmarks_memory=tmp_path / "bank",
        runs_dir=runs,
    )
    yield TestClient(create_app(options), base_url="http://127.0.0.1:8765")


def alert(response: object) -> str:
    text = str(getattr(response, "text", ""))
    return text.split('role="alert">', 1)[1].split("</p>", 1)[0]


def test_the_arcs_list_names_the_novel_and_its_characters_with_arcs(client: TestClient) -> None:
    page = client.get("/arcs").text
    assert "The Keeper of Gull Rock" in page
    assert f'href="/arcs/{NOVEL}/{CHARACTER}"' in page and "(2 axes)" in page


@pytest.mark.parametrize(
    ("address", "status", "message"),
    [
        ("/arcs/no_such_book/Mara", 404, "no imported novel 'no_such_book'"),
        (f"/arcs/{NOVEL}/Elias", 404, "'Elias' has no arcs in the_keeper_of_gull_rock"),
        (f"/arcs/{NOVEL}/Mara?chapter=9", 400, "chapter 9 is out of range"),
        (f"/arcs/{NOVEL}/Mara?chapter=three", 400, "chapter 'three' is not a number"),
        ("/arcs/..%2f..%2fetc/Mara", 404, None),
    ],
)
def test_an_unknown_novel_character_or_chapter_is_one_line(
    client: TestClient, address: str, status: int, message: str | None
) -> None:
    response = client.get(address)
    assert response.status_code == status
    if message is not None:
        shown = alert(response).replace("&#39;", "'")
        assert message in shown and "\n" not in shown and "Traceback" not in response.text


def test_asking_with_a_bad_mode_or_no_scenario_calls_no_model(client: TestClient) -> None:
    # No model is configured here: a form error must be caught before any call is tried.
    address = f"/arcs/{NOVEL}/{CHARACTER}"
    bad_mode = client.post(address, data={"chapter": "3", "mode": "oracle", "scenario": "x"})
    assert bad_mode.status_code == 400
    assert "unknown mode 'oracle'" in alert(bad_mode).replace("&#39;", "'")
    empty = client.post(address, data={"chapter": "3", "mode": "arc", "scenario": "  "})
    assert empty.status_code == 400 and "the scenario is empty" in alert(empty)
    late = client.post(address, data={"chapter": "6", "mode": "arc", "scenario": "A storm."})
    assert late.status_code == 400 and "chapter 6 is out of range" in alert(late)
    unprepared = client.post(address, data={"chapter": "2", "mode": "summary", "scenario": "A."})
    assert unprepared.status_code == 400
    assert "chapter summaries are missing" in alert(unprepared)
    assert f"run personae arcane prepare {NOVEL}" in alert(unprepared)


@pytest.mark.parametrize(
    ("address", "status", "message"),
    [
        ("/storylines/1", 404, "no storyline 1 (this server serves 1)"),
        ("/storylines/0?character=Nobody", 400, "unknown character 'Nobody' in gull_rock"),
        ("/storylines/0?character=Mara&position=60", 400, "position 60 is out of range"),
        ("/storylines/0?character=Mara&position=-1", 400, "position -1 is out of range"),
        ("/storylines/0?character=Mara&position=4x", 400, "position '4x' is not a number"),
    ],
)
def test_an_unknown_storyline_character_or_position_is_one_line(
    client: TestClient, address: str, status: int, message: str
) -> None:
    response = client.get(address)
    assert response.status_code == status
    assert message in alert(response).replace("&#39;", "'")


def test_a_storyline_question_out_of_range_is_refused_before_any_model_call(
    client: TestClient, tmp_path: Path
) -> None:
    asked = {"character": "Mara", "position": "75", "question": "Where is Mara?", "type": "state"}
    response = client.post("/storylines/0", data=asked)
    assert response.status_code == 400 and "position 75 is out of range" in alert(response)
    bad_type = client.post("/storylines/0", data={**asked, "position": "4", "type": "mood"})
    assert "unknown question type 'mood'" in alert(bad_type).replace("&#39;", "'")
    long = client.post("/storylines/0", data={**asked, "position": "4", "question": "?" * 4001})
    assert "the question is 4001 characters long" in alert(long)
    assert not (tmp_path / "bank").exists()  # nothing half-written


def test_the_storyline_view_shows_the_actions_and_no_bank_before_one_exists(
    client: TestClient,
) -> None:
    page = client.get("/storylines/0?character=Mara&position=40").text
    assert "Mara climbs the tower alone and lights the lamp." in page
    assert "No bookmark bank yet" in page
    rows = re.findall(r'<tr data-position="(\d+)"( class="future")?>', page)
    greyed = {int(position) for position, future in rows if future}
    assert greyed == {int(position) for position, _ in rows if int(position) >= 40} != set()


def test_reports_list_only_report_files_inside_the_runs_folder(client: TestClient) -> None:
    page = client.get("/reports").text
    assert 'href="/reports/view/bench/report.md"' in page
    assert 'href="/reports/view/bench/report.html"' in page
    assert "notes.md" not in page and ".checkpoints" not in page and "linked" not in page


def test_a_markdown_report_renders_its_tables_and_keeps_html_as_text(client: TestClient) -> None:
    page = client.get("/reports/view/bench/report.md").text
    assert "<th>method</th>" in page and "<td>0.61</td>" in page
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert 'href="javascript:' not in page
    assert 'href="/reports/view/bench/report.html">as HTML' in page  # its twin, with figures


def test_a_raw_html_block_of_a_markdown_report_becomes_a_note() -> None:
    from personae.web.pages.reports import FIGURE_NOTE, markdown_html

    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="5">\n<script>x()</script>\n</svg>\n'
    assert markdown_html(f"# Plot\n\n{svg}\nafter <b>x</b>\n") == (
        f"<h1>Plot</h1>\n{FIGURE_NOTE}<p>after &lt;b&gt;x&lt;/b&gt;</p>\n"
    )


def test_an_html_report_is_framed_in_a_sandbox_and_served_without_scripts(
    client: TestClient,
) -> None:
    page = client.get("/reports/view/bench/report.html").text
    assert '<iframe class="report-frame" sandbox src="/reports/file/bench/report.html"' in page
    served = client.get("/reports/file/bench/report.html")
    assert served.text == "<h1>Bench</h1>"
    assert served.headers["content-security-policy"] == REPORT_POLICY
    assert "default-src 'none'" in REPORT_POLICY and "sandbox" in REPORT_POLICY
    assert served.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "address",
    [
        "/reports/view/..%2Fsecret%2Freport.md",
        "/reports/file/..%2Fsecret%2Freport.md",
        "/reports/view/linked/report.md",  # a link out of the runs folder
        "/reports/view/.checkpoints/report.md",
        "/reports/view/bench/notes.md",
        "/reports/file/bench/missing/report.md",
    ],
)
def test_a_path_escaping_the_runs_folder_or_naming_no_report_is_refused(
    client: TestClient, address: str
) -> None:
    response = client.get(address)
    assert response.status_code == 404
    assert "outside" not in response.text and "pick one on /reports" in alert(response)


def test_the_report_names_are_the_ones_the_evaluations_write() -> None:
    from personae.commands.characterhub.eval_profile import REPORT_NAME

    assert {REPORT_MD, REPORT_HTML, "summary.json", REPORT_NAME} <= REPORT_NAMES
    assert {Path(REPORT_NAME).with_suffix(s).name for s in (".md", ".html")} <= REPORT_NAMES


def test_an_absent_runs_folder_lists_nothing(tmp_path: Path) -> None:
    assert find_reports(tmp_path / "none") == ([], False)


def test_a_damaged_novel_or_storyline_is_listed_with_its_one_line_error(tmp_path: Path) -> None:
    broken = tmp_path / "data" / "novels" / "broken"
    broken.mkdir(parents=True)
    (broken / "meta.json").write_text("{", encoding="utf-8")
    (broken / "chapters.jsonl").write_text("", encoding="utf-8")
    storyline = tmp_path / "torn.jsonl"
    storyline.write_text('{"action": "x"}\n', encoding="utf-8")
    options = WebOptions(data_dir=tmp_path / "data", storylines=(storyline,))
    client = TestClient(create_app(options), base_url="http://127.0.0.1:8765")
    arcs = client.get("/arcs")
    assert arcs.status_code == 200 and 'class="error"' in arcs.text and "broken" in arcs.text
    storylines = client.get("/storylines")
    assert storylines.status_code == 200
    assert "has no &#39;character&#39; or &#39;characters&#39;" in storylines.text


def test_a_storyline_without_a_character_lists_its_characters(client: TestClient) -> None:
    page = client.get("/storylines/0").text
    for name in ("Mara", "Tobias", "Elias"):
        assert f'href="/storylines/0?character={name}&amp;position=59"' in page
    assert 'table class="actions"' not in page


def test_posting_to_an_unknown_novel_or_storyline_is_one_line(client: TestClient) -> None:
    novel = client.post("/arcs/no_such_book/Mara", data={"chapter": "1", "scenario": "x"})
    assert novel.status_code == 404 and "no imported novel" in alert(novel)
    storyline = client.post("/storylines/4", data={"character": "Mara", "position": "1"})
    assert storyline.status_code == 404 and "no storyline 4" in alert(storyline)


def test_a_storyline_question_without_a_model_says_which_setting_is_missing(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    asked = {"character": "Mara", "position": "12", "question": "Where is Mara?", "type": "state"}
    response = client.post("/storylines/0", data=asked)
    assert response.status_code == 400
    assert "OPENAI_API_KEY" in alert(response) and "Traceback" not in response.text


def test_the_bank_shows_what_a_reader_at_the_position_may_see(tmp_path: Path) -> None:
    from personae.memory.bookmarks.bank import BookmarkBank
    from personae.memory.bookmarks.bookmark import BookmarkType
    from personae.web.pages.storylines import bank_at

    bank = BookmarkBank.open("gull_rock", tmp_path / "bank")
    bank.create(
        question="Where is Mara?", type=BookmarkType.STATE, character="Mara",
        answer="in the tower", position=10,
    )  # fmt: skip
    bank.create(
        question="What does Tobias do at dusk?", type=BookmarkType.BEHAVIORAL,
        character="Tobias", answer="he counts the steps", position=5,
    )  # fmt: skip
    bank.create(
        question="Who is Elias?", type=BookmarkType.CONCEPT, character="Mara",
        answer="a surveyor", position=30, keyword="Elias",
    )  # fmt: skip
    shown, later = bank_at(bank, "Mara", 20)
    assert [(e.question, e.answer, e.synced_to) for e in shown] == [
        ("Where is Mara?", "in the tower", 10)
    ]
    assert later == 1  # Elias is answered only from position 30; Tobias's habit is his own
    shown, later = bank_at(bank, "Tobias", 30)
    assert [e.answer for e in shown] == ["in the tower", "he counts the steps", "a surveyor"]


def test_a_model_failure_is_a_502_and_a_form_error_a_400() -> None:
    from personae.errors import RemoteError
    from personae.web.pages.arcs import status_of

    assert status_of(RemoteError("the model server failed")) == 502
    assert status_of(InputError("bad")) == 400


def test_the_reports_listing_is_bounded_and_large_or_torn_files_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from personae.web.pages import reports

    runs = tmp_path / "runs"
    for name in ("a", "b", "c"):
        (runs / name).mkdir(parents=True)
        (runs / name / "summary.json").write_text('{"torn": ', encoding="utf-8")
    (runs / "a" / "report.md").write_text("# " + "x" * 300, encoding="utf-8")
    monkeypatch.setattr(reports, "MAX_FILES", 2)
    listed, cut = reports.find_reports(runs)
    assert len(listed) == 2 and cut
    client = TestClient(create_app(WebOptions(runs_dir=runs)), base_url="http://127.0.0.1:8765")
    assert "Only the first 2 reports are listed." in client.get("/reports").text
    torn = client.get("/reports/view/b/summary.json")
    assert torn.status_code == 200 and "{&#34;torn&#34;: " in torn.text  # shown as it is
    monkeypatch.setattr(reports, "LARGEST_SHOWN", 100)
    large = client.get("/reports/view/a/report.md")
    assert large.status_code == 404 and "too large to show here" in alert(large)


def test_the_web_command_passes_the_storylines_and_their_bank_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, story: Story
) -> None:
    import uvicorn

    from personae.cli import main

    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: served.append(app))
    bank = tmp_path / "bank"
    argv = ["web", "--storyline", str(story.storyline), "--bookmarks-memory", str(bank)]
    assert main([*argv, "--runs", str(tmp_path / "runs")]) == 0
    options = served[0].state.options
    assert options.storylines == (story.storyline.resolve(),)
    assert options.bookmarks_memory == bank.resolve() and bank.resolve() in options.folders


def test_empty_folders_say_which_command_fills_them(tmp_path: Path) -> None:
    options = WebOptions(data_dir=tmp_path / "data", runs_dir=tmp_path / "runs")
    client = TestClient(create_app(options), base_url="http://127.0.0.1:8765")
    assert "No novel imported yet: <code>personae arcane import" in client.get("/arcs").text
    storylines = client.get("/storylines").text
    assert "serves no storyline: start it with <code>personae web --storyline FILE" in storylines
    assert "No report yet." in client.get("/reports").text
    assert not (tmp_path / "data").exists() and not (tmp_path / "runs").exists()

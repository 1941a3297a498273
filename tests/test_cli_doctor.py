"""`personae doctor` against loopback services: every check, and each failure it reports.

The LLM is :class:`FakeOpenAIChat` (the real ChatOpenAI client runs), Tavily and the wiki are
the project's web fakes, all on one loopback server; nothing else is faked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAIChat
from fake_web import FakeTavily, FakeWeb
from profiler_world import hokuto_wiki

from personae.cli import main
from personae.loopback import LoopbackWebServer, WebRequest, WebResponse, free_port


class World:
    """One loopback server: ``/v1/...`` is the LLM server, the rest Tavily and a wiki."""

    def __init__(self, chat: FakeOpenAIChat) -> None:
        self.chat = chat
        self.tavily = FakeTavily(lambda _: [], api_key="tvly-good")
        self.web = FakeWeb(tavily=self.tavily, wiki=hokuto_wiki())

    def route(self, request: WebRequest) -> WebResponse:
        if request.path.startswith("/v1/"):
            return self.chat(request)
        return self.web.route(request)


def fake_llm(**options: Any) -> FakeOpenAIChat:
    return FakeOpenAIChat({"DoctorProbe": lambda _: {"answer": "yes"}}, **options)


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # the default output folders are checked in the working dir


def serve(
    monkeypatch: pytest.MonkeyPatch, chat: FakeOpenAIChat, **env: str
) -> tuple[LoopbackWebServer, World]:
    world = World(chat)
    server = LoopbackWebServer(world.route)
    defaults = {
        "OPENAI_BASE_URL": f"{server.url}/v1",
        "PERSONAE_MODEL": "openai:m",
        "TAVILY_API_KEY": "tvly-good",
        "TAVILY_BASE_URL": server.url,
    }
    for name, value in {**defaults, **env}.items():
        monkeypatch.setenv(name, value)
    return server, world


def doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["doctor", "--json", *argv])
    captured = capsys.readouterr()
    rows = {row["check"]: row for row in json.loads(captured.out)}
    return code, rows, captured.err


def test_everything_answers_exit_0_with_the_method_that_works_and_its_latency(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    served = ("m", "gpt-4.1", "deepseek/deepseek-v4-flash")  # the paper judges too
    chat = fake_llm(models=served, methods=("function_calling", "json_mode"))
    server, world = serve(monkeypatch, chat)
    with server:
        code, rows, err = doctor(capsys, "--wiki", server.url, "--out", str(tmp_path / "mine"))
    assert code == 0 and err == ""
    assert rows["LLM server"]["status"] == "ok" and rows["LLM server"]["models"] == list(served)
    strong = rows["strong model"]
    assert strong["status"] == "ok"
    assert strong["detail"].startswith("openai:m: auto picks function_calling (")
    assert "json_schema HTTP 500: response_format: Input should be 'text'" in strong["detail"]
    assert "json_mode works" in strong["detail"]
    assert [m["result"] for m in strong["methods"]] == ["fail", "ok", "ok"]
    assert all(m["seconds"] < 10 for m in strong["methods"])
    assert rows["fast model"]["detail"] == "openai:m: same model as strong"
    assert rows["judge model"]["status"] == "ok"
    assert rows["judge model (bookmarks bench)"]["detail"].startswith("openai:gpt-4.1: auto")
    arcane = rows["judge model (arcane eval)"]
    assert arcane["detail"].startswith("openai:deepseek/deepseek-v4-flash: auto")
    assert rows["embedding"]["detail"] == "hashing: 384 dimensions"
    assert rows["checkpointer"]["detail"] == "sqlite: one file beside each command's output"
    assert rows["Tavily"]["status"] == "ok" and len(world.tavily.queries) == 1
    assert rows["wiki"]["detail"].startswith(f"{server.url}: Hokuto Wiki")
    assert rows[f"folder --out {tmp_path / 'mine'}"]["status"] == "ok"
    assert {"folder profiles", "folder personas", "folder runs"} <= set(rows)
    assert not (tmp_path / "profiles").exists()  # checked, not created


def test_the_table_has_one_line_per_check(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server, _ = serve(monkeypatch, fake_llm(), TAVILY_API_KEY="")
    with server:
        code = main(["doctor"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0].split() == ["check", "status", "time", "detail"]
    assert out[1].split()[:3] == ["LLM", "server", "ok"]
    tavily = next(line for line in out if line.startswith("Tavily"))
    assert "warn" in tavily and "TAVILY_API_KEY is not set" in tavily


def test_a_server_nobody_listens_at_fails_at_once_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", closed)
    monkeypatch.setenv("PERSONAE_MODEL", "openai:m")
    code, rows, err = doctor(capsys, "--no-web")
    assert code == 3
    assert rows["LLM server"]["detail"].startswith(f"{closed}: nothing answers there; check")
    assert [rows[f"{r} model"]["status"] for r in ("strong", "fast", "judge")] == ["skip"] * 3
    assert err == "personae: error: 1 check(s) failed (LLM server); fix them before a run\n"


def test_no_llm_configured_is_a_setting_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, err = doctor(capsys, "--no-web")
    assert code == 2 and rows["LLM server"]["status"] == "fail"
    assert "no LLM is configured" in rows["LLM server"]["detail"]
    assert "OPENAI_BASE_URL" in rows["LLM server"]["detail"] and err.count("\n") == 1


def test_a_model_the_server_does_not_serve_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = fake_llm(models=("m",))
    server, _ = serve(monkeypatch, chat, PERSONAE_JUDGE_MODEL="openai:gpt-judge")
    with server:
        code, rows, err = doctor(capsys, "--no-web")
    assert code == 3 and rows["strong model"]["status"] == "ok"
    judge = rows["judge model"]
    assert judge["status"] == "fail" and judge["listed"] is False
    assert judge["detail"].startswith("openai:gpt-judge: not among the served models (m)")
    assert "does not exist" in judge["detail"]
    assert "(judge model, judge model (bookmarks bench), judge model (arcane eval))" in err
    bench = rows["judge model (bookmarks bench)"]  # PERSONAE_JUDGE_MODEL judges there too
    assert bench["detail"] == "openai:gpt-judge: same model as judge" and bench["status"] == "fail"


def test_a_server_taking_no_structured_method_fails_naming_each(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server, _ = serve(monkeypatch, fake_llm(methods=(), models=("m",)))
    with server:
        code, rows, _ = doctor(capsys, "--no-web")
    detail = rows["strong model"]["detail"]
    assert code == 3 and detail.startswith("openai:m: no structured-output method works (")
    for method in ("json_schema: ", "function_calling: ", "json_mode: "):
        assert method in detail


def test_a_set_method_is_the_only_one_tried(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = fake_llm(methods=("function_calling",))
    server, _ = serve(monkeypatch, chat, PERSONAE_STRUCTURED_OUTPUT="json_schema")
    with server:
        code, rows, _ = doctor(capsys, "--no-web")
    assert code == 3
    assert [m["method"] for m in rows["strong model"]["methods"]] == ["json_schema"]
    assert "HTTP 500" in rows["strong model"]["detail"] and chat.requests == []


def test_a_malformed_answer_counts_as_not_working(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = FakeOpenAIChat({"DoctorProbe": lambda _: {"answer": "maybe"}})
    server, _ = serve(monkeypatch, chat)
    with server:
        code, rows, _ = doctor(capsys, "--no-web")
    assert code == 3
    tried = {m["method"]: m["detail"] for m in rows["strong model"]["methods"]}
    assert tried["function_calling"].startswith("malformed DoctorProbe output 1 times")


def test_a_bad_tavily_key_and_a_non_wiki_url_fail(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server, world = serve(monkeypatch, fake_llm(), TAVILY_API_KEY="tvly-wrong")
    with server:
        code, rows, err = doctor(capsys, "--wiki", f"{server.url}/v1")
    assert code == 2  # the key is a setting; nothing remote failed
    assert rows["Tavily"]["status"] == "fail"
    assert "TAVILY_API_KEY is invalid (Tavily answered 401)" in rows["Tavily"]["detail"]
    assert rows["wiki"]["status"] == "fail"
    assert "is not a MediaWiki site" in rows["wiki"]["detail"]
    assert "(Tavily, wiki)" in err and world.tavily.queries == []


def test_an_unusable_folder_and_a_broken_embedding_fail(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    server, _ = serve(monkeypatch, fake_llm(), PERSONAE_EMBEDDINGS="openai:embedder")
    with server:
        code, rows, _ = doctor(capsys, "--no-web", "--out", str(blocker / "out"))
    assert code == 3
    folder = rows[f"folder --out {blocker / 'out'}"]
    assert folder["status"] == "fail" and "is not a folder" in folder["detail"]
    embedding = rows["embedding"]
    assert embedding["status"] == "fail"
    assert embedding["detail"].startswith(f"the embedding server at {server.url}/v1 answered 404")


def test_a_malformed_setting_is_one_failing_row(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PERSONAE_STRUCTURED_OUTPUT", "tools")
    code, rows, _ = doctor(capsys)
    assert code == 2 and list(rows) == ["settings"]
    assert "PERSONAE_STRUCTURED_OUTPUT='tools' is not a structured-output method" in str(
        rows["settings"]["detail"]
    )


def test_every_row_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = FakeOpenAIChat({"DoctorProbe": lambda _: "not\njson\nat all"}, methods=("json_mode",))
    server, _ = serve(monkeypatch, chat)
    with server:
        code = main(["doctor", "--no-web"])
    out = capsys.readouterr().out.splitlines()
    assert code == 3
    assert [line.split()[0] for line in out] == [
        "check",
        "LLM",
        "strong",
        "fast",
        *["judge"] * 3,
        "embedding",
        "checkpointer",
        *["folder"] * 5,
    ]


def test_the_paper_judges_the_evaluations_call_are_checked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A local server serving one model: green for profile, but the bench would fail."""
    from personae.evals.arcane.eval_graph import ArcaneEvalContext
    from personae.evals.bookmarks.bench import BenchModels

    server, _ = serve(monkeypatch, fake_llm(models=("m",)))
    with server:
        code, rows, err = doctor(capsys, "--no-web")
        assert code == 3 and rows["judge model"]["detail"] == "openai:m: same model as strong"
        for command, spec in (
            ("bookmarks bench", BenchModels.default_judge),
            ("arcane eval", ArcaneEvalContext.default_judge),
        ):
            row = rows[f"judge model ({command})"]
            assert row["status"] == "fail" and row["detail"].startswith(f"{spec}: not among")
            assert row["detail"].endswith("--judge-model / PERSONAE_JUDGE_MODEL")
        monkeypatch.setenv("PERSONAE_JUDGE_MODEL", "openai:m")  # one judge for every command
        code, rows, err = doctor(capsys, "--no-web")
    assert code == 0 and err == ""
    assert rows["judge model (arcane eval)"]["detail"] == "openai:m: same model as strong"


def test_an_unreachable_checkpoint_database_fails_without_its_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://me:s3cret@127.0.0.1:{free_port()}/personae"
    server, _ = serve(monkeypatch, fake_llm(), PERSONAE_CHECKPOINTER=url)
    with server:
        code, rows, err = doctor(capsys, "--no-web")
        assert code == 3 and "(checkpointer)" in err
        row = rows["checkpointer"]
        assert row["status"] == "fail" and "s3cret" not in row["detail"]
        assert row["detail"].startswith(
            "cannot reach the checkpoint database (Postgres at 127.0.0.1"
        )
        monkeypatch.setenv("PERSONAE_CHECKPOINTER", "mysql://me:s3cret@db/x")
        code, rows, _ = doctor(capsys, "--no-web")
    assert code == 2 and rows["checkpointer"]["status"] == "fail"
    assert (
        "PERSONAE_CHECKPOINTER='mysql://***@db/x' is not a checkpointer"
        in rows["checkpointer"]["detail"]
    )


@pytest.mark.slow
def test_a_reachable_checkpoint_database_is_ok_without_its_password(
    monkeypatch: pytest.MonkeyPatch, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    server, _ = serve(monkeypatch, fake_llm(), PERSONAE_CHECKPOINTER=postgres_url)
    with server:
        code, rows, _ = doctor(capsys, "--no-web")
    row = rows["checkpointer"]
    assert code == 0 and row["status"] == "ok"
    assert row["detail"].startswith("Postgres at ") and row["detail"].endswith(" answers")


def test_a_long_refusal_is_cut_at_a_word_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 27: the json_mode detail was cut at 120 characters, mid-word."""
    chat = fake_llm(methods=("function_calling",), models=("m",))
    said = "json_object response format requires the word JSON in the messages " * 3

    def refusing(request: WebRequest) -> WebResponse:
        if b'"json_object"' in request.body:
            return WebResponse(500, {"error": {"message": said.strip(), "type": "invalid"}})
        return chat(request)

    # One model served: it is every role's, the paper judges' too (else their rows fail).
    server, world = serve(monkeypatch, chat, PERSONAE_JUDGE_MODEL="openai:m")
    world.chat = refusing  # type: ignore[assignment]
    with server:
        code, rows, _ = doctor(capsys, "--no-web")
    tried = {m["method"]: m["detail"] for m in rows["strong model"]["methods"]}
    assert code == 0
    assert tried["json_mode"] == (
        "HTTP 500: json_object response format requires the word JSON in the messages "
        "json_object response format requires the…"
    )

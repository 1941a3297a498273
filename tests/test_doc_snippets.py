"""The docs' snippets that are not tours: settings, client configurations, Python examples.

Why: each block here was marked "not run" and two were wrong when first run. The model setups
of Getting started and the README, run as written (each ``export`` line one setup) against a
loopback server serving only the models the line names, ended ``personae doctor`` with exit 3:
the evaluations' own judges (``gpt-4.1``, the ARCANE paper's ``deepseek/deepseek-v4-flash``)
are not on an Ollama or llama.cpp server, nor deepseek on OpenAI. MCP client snippets cannot
start a server in a test, so they are checked for what a client does with them: the JSON
parses, the command is an installed ``personae`` and its arguments are a valid ``personae mcp``
command line (``build_parser``), the settings it passes are settings Personae reads.
"""

from __future__ import annotations

import io
import json
import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_openai import METHODS, FakeOpenAIChat
from fake_web import FakeTavily, FakeWeb
from mcp_world import over_http
from profile_eval_world import FIXTURE as PROFILE_EVAL_FIXTURE
from profile_eval_world import keyword_judge
from profile_eval_world import scripted_model as eval_model
from profiler_world import hokuto_wiki, web_results
from sample_world import copy_samples, sample_llm
from studio_world import ANSWER
from studio_world import scripted_model as studio_model

from personae.cli import build_parser, main
from personae.loopback import LoopbackWebServer
from personae.settings import VARIABLES
from personae.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def marked_blocks(page: Path, test: str) -> list[str]:
    """The bodies of ``page``'s fenced blocks marked ``<!-- run: tests/...::TEST -->``."""
    marker = re.compile(rf"^<!-- run: tests/test_doc_snippets\.py::{test} -->$")
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[str] = []
    for number, line in enumerate(lines):
        if marker.match(line.strip()) and lines[number + 1].startswith("```"):
            end = next(i for i in range(number + 2, len(lines)) if lines[i].startswith("```"))
            blocks.append("\n".join(lines[number + 2 : end]))
    return blocks


def test_marked_blocks_finds_the_block_after_its_marker(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    marker = "<!-- run: tests/test_doc_snippets.py::test_x -->"
    page.write_text(f"a\n{marker}\n```bash\nls\nls -l\n```\n```bash\nno\n```\n")
    assert marked_blocks(page, "test_x") == ["ls\nls -l"]
    assert marked_blocks(page, "test_y") == []


# --- Point it at a model: every setup passes `personae doctor` ---------------------------------

OPENAI_CATALOGUE = ("gpt-4.1", "gpt-4.1-mini")
"""What the OpenAI line's server (api.openai.com, played on loopback) serves of ours."""


def setups(block: str) -> list[dict[str, str]]:
    """One environment per ``export`` line of ``block`` (each line is one server's setup)."""
    found = []
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            found.append(dict(word.split("=", 1) for word in words[1:]))
    return found


SETUP_PAGES = [DOCS / "getting-started.md", ROOT / "README.md"]


@pytest.mark.parametrize("page", SETUP_PAGES, ids=lambda p: p.name)
def test_every_model_setup_passes_doctor(
    page: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (block,) = marked_blocks(page, "test_every_model_setup_passes_doctor")
    assert block.splitlines()[-1] == "uv run personae doctor"
    found = setups(block)
    assert len(found) >= 2 and "OPENAI_API_KEY" in found[0]  # OpenAI first, then local servers
    monkeypatch.chdir(tmp_path)
    for env in found:
        named = [value.split(":", 1)[1] for key, value in env.items() if key.endswith("_MODEL")]
        local = "OPENAI_BASE_URL" in env  # a local server serves just what the line names
        served = tuple(named) if local else (*OPENAI_CATALOGUE, *named)
        chat = FakeOpenAIChat(
            {"DoctorProbe": lambda _: {"answer": "yes"}}, methods=METHODS, models=served
        )
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", *env):
            monkeypatch.delenv(name, raising=False)
        with LoopbackWebServer(chat) as server:
            for name, value in env.items():
                monkeypatch.setenv(name, value)
            # the line's server (OpenAI's when it names none) is the loopback one
            monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
            code = main(["doctor"])
        out = capsys.readouterr()
        assert code == 0, f"{env}: {out.err.strip()}\n{out.out}"
        assert {request["model"] for request in chat.requests} <= set(served)


# --- Deploy: the Python API and the graphs, and MCP clients ------------------------------------

DEPLOY = DOCS / "deploy.md"


def test_the_python_api_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (code,) = marked_blocks(DEPLOY, "test_the_python_api_example_runs")
    copy_samples(tmp_path)
    monkeypatch.chdir(tmp_path)
    with sample_llm(monkeypatch) as llm:
        exec(compile(code, "deploy.md", "exec"), {})  # noqa: S102
    assert capsys.readouterr().out.strip()  # Mara's answer
    assert (tmp_path / "personas").is_dir() and llm.requests


def test_the_graph_imports_resolve() -> None:
    (code,) = marked_blocks(DEPLOY, "test_the_graph_imports_resolve")
    namespace: dict[str, Any] = {}
    exec(compile(code, "deploy.md", "exec"), namespace)  # noqa: S102
    named = set(re.findall(r"import (.+)", code))
    names = {name.strip() for line in named for name in line.split(",")}
    assert names and all(callable(namespace[name]) for name in names)


def _personae_argv(words: list[str]) -> list[str]:
    """The arguments after ``uv run personae`` or an installed ``.../bin/personae``."""
    if words[:3] == ["uv", "run", "personae"]:
        return words[3:]
    assert words[0].endswith("/.venv/bin/personae"), words
    return words[1:]


def _check_mcp_argv(argv: list[str], absolute: bool) -> None:
    args = build_parser().parse_args(argv)  # argparse exits 2 on a wrong flag
    assert args.command == "mcp", argv
    if absolute:  # a client starts the server from its own working directory
        paths = [argv[i + 1] for i, word in enumerate(argv) if word.startswith("--")]
        paths = [p for p in paths if "/" in p]
        assert paths and all(p.startswith("/") for p in paths), argv


def test_the_mcp_commands_are_valid() -> None:
    (block,) = marked_blocks(DEPLOY, "test_the_mcp_commands_are_valid")
    lines = block.replace("\\\n", " ").splitlines()
    argvs = [_personae_argv(shlex.split(line, comments=True)) for line in lines]
    assert len(argvs) == 2
    for argv in argvs:
        _check_mcp_argv(argv, absolute=False)
    assert build_parser().parse_args(argvs[1]).transport == "http"


def test_the_claude_desktop_config_starts_personae_mcp() -> None:
    (block,) = marked_blocks(DEPLOY, "test_the_claude_desktop_config_starts_personae_mcp")
    server = json.loads(block)["mcpServers"]["personae"]
    _check_mcp_argv(_personae_argv([server["command"], *server["args"]]), absolute=True)
    assert set(server["env"]) <= set(VARIABLES) and "OPENAI_API_KEY" in server["env"]


def test_the_inspector_line_starts_personae_mcp() -> None:
    (block,) = marked_blocks(DEPLOY, "test_the_inspector_line_starts_personae_mcp")
    words = shlex.split(block.replace("\\\n", " "))
    assert words[:2] == ["npx", "@modelcontextprotocol/inspector"]
    before, after = words[: words.index("--")], words[words.index("--") + 1 :]
    passed = [before[i + 1].split("=", 1)[0] for i, word in enumerate(before) if word == "-e"]
    assert passed and set(passed) <= set(VARIABLES)
    _check_mcp_argv(_personae_argv(after), absolute=True)


# --- Development: CI's commands, testing your own app ------------------------------------------

DEVELOPMENT = DOCS / "development.md"


def _command(line: str) -> str:
    """A shell line without its comment, its words single-spaced."""
    return " ".join(line.split("#", 1)[0].split())


def test_the_ci_commands_are_what_ci_runs() -> None:
    (block,) = marked_blocks(DEVELOPMENT, "test_the_ci_commands_are_what_ci_runs")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    ran = [_command(line).replace("uv run --frozen ", "uv run ") for line in ci.splitlines()]
    documented = [_command(line) for line in block.splitlines()]
    positions = [ran.index(line) for line in documented]  # ValueError: CI does not run it
    assert positions == sorted(positions), "CI runs them in another order"


def test_the_model_override_example_works(monkeypatch: pytest.MonkeyPatch) -> None:
    from personae.errors import ConfigurationError
    from personae.llm import resolve_chat_model

    (code,) = marked_blocks(DEVELOPMENT, "test_the_model_override_example_works")
    seen: list[dict[str, Any]] = []

    def probe() -> None:
        found: dict[str, Any] = {}
        for spec in ("openai:judge", "openai:gpt-4.1"):
            try:
                found[spec] = resolve_chat_model(spec)
            except ConfigurationError:
                found[spec] = None  # no override, no server: what a user's app would build
        seen.append(found)

    assert code.count("\n    ...") == 2
    namespace: dict[str, Any] = {"probe": probe}
    exec(compile(code.replace("\n    ...", "\n    probe()"), "development.md", "exec"), namespace)  # noqa: S102
    model, judge = namespace["model"], namespace["judge"]
    assert seen == [
        {"openai:judge": model, "openai:gpt-4.1": model},  # every spec
        {"openai:judge": judge, "openai:gpt-4.1": None},  # only the named one
    ]


# --- README: the main job and its Python twin, on Kenshiro's wiki played on loopback -----------

README = ROOT / "README.md"


@contextmanager
def kenshiro_web(
    monkeypatch: pytest.MonkeyPatch,
    wiki: Any = None,
    model: ScriptedChatModel | None = None,
) -> Iterator[tuple[str, FakeOpenAIChat]]:
    """Fandom (Kenshiro's wiki, or ``wiki``) and Tavily on loopback, reached through the
    settings naming their addresses, and ``model`` (default: the studio world's) behind the
    loopback LLM server. Yields the site's URL and the LLM server's fake."""
    web = FakeWeb(
        tavily=FakeTavily(web_results, api_key="tvly-test"),
        wikis={"/fistofthenorthstar": wiki or hokuto_wiki()},
    )
    chat = FakeOpenAIChat(over_http(model or studio_model()), methods=METHODS)
    with LoopbackWebServer(web.route) as site, LoopbackWebServer(chat) as llm:
        monkeypatch.setenv("PERSONAE_FANDOM_TEMPLATE", site.url + "/{slug}")
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_BASE_URL", site.url)
        monkeypatch.setenv("OPENAI_BASE_URL", f"{llm.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield site.url, chat


KENSHIRO = Path("profiles") / "kenshiro--fist-of-the-north-star"


@pytest.mark.parametrize("page", [README, DOCS / "getting-started.md"], ids=lambda p: p.name)
def test_the_profile_command_runs(
    page: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (block,) = marked_blocks(page, "test_the_profile_command_runs")
    monkeypatch.chdir(tmp_path)
    with kenshiro_web(monkeypatch) as (_, llm):
        code = main(shlex.split(block)[3:])
    assert code == 0, capsys.readouterr().err
    document = json.loads((KENSHIRO / "profile.json").read_text(encoding="utf-8"))
    assert document["profile"].startswith("I am Kenshiro")
    assert any("/fistofthenorthstar/wiki/" in source["url"] for source in document["sources"])
    assert (KENSHIRO / "profile.md").is_file() and (KENSHIRO / "card.json").is_file()
    assert llm.requests


def test_the_readme_python_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (code,) = marked_blocks(README, "test_the_readme_python_example_runs")
    monkeypatch.chdir(tmp_path)
    with kenshiro_web(monkeypatch):
        exec(compile(code, "README.md", "exec"), {})  # noqa: S102
    assert capsys.readouterr().out.strip() == ANSWER  # Kenshiro's answer, from his persona
    assert (KENSHIRO / "profile.json").is_file() and Path("personas").is_dir()


# --- CharacterHub: a profile made with its reference page and one made without ------------------

CHARACTERHUB = DOCS / "papers" / "characterhub.md"


def test_the_reference_allowed_and_excluded_recipe_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fandom is played on loopback: the page's ``https://hokuto.fandom.com`` is read as the
    loopback Hokuto wiki, found from the franchise as Fandom is (``PERSONAE_FANDOM_TEMPLATE``;
    Toki's page is the saved one the evaluation tests use)."""
    (block,) = marked_blocks(CHARACTERHUB, "test_the_reference_allowed_and_excluded_recipe_runs")
    assignment, *lines = block.replace("\\\n", " ").splitlines()
    name, ref = assignment.split("=", 1)
    wiki = hokuto_wiki()
    wiki.pages["Toki"] = PROFILE_EVAL_FIXTURE.read_text(encoding="utf-8")
    answers = {**studio_model().responders, **eval_model().responders}
    answers["AlignmentList"] = keyword_judge("Toki")
    monkeypatch.chdir(tmp_path)
    with kenshiro_web(monkeypatch, wiki, ScriptedChatModel(responders=answers)) as (site, _):
        served = ref.replace("https://hokuto.fandom.com", f"{site}/fistofthenorthstar")
        for line in lines:
            argv = shlex.split(line.replace(f"${name}", served), comments=True)[3:]
            code = main(argv)
            out = capsys.readouterr()
            assert code == 0, f"{line}\n{out.err}"
    allowed, excluded = (
        json.loads(Path(folder, "toki--fist-of-the-north-star", "profile.json").read_text())
        for folder in ("allowed", "excluded")
    )
    assert any(source["url"] == served for source in allowed["sources"])
    assert excluded["excluded_urls"] == [served]
    assert all(source["url"] != served for source in excluded["sources"])
    beside = Path("allowed", "toki--fist-of-the-north-star", "eval-report.md")  # the first's
    report = beside.read_text(encoding="utf-8")
    assert "reference allowed" in report and "reference excluded" in report


def test_the_profile_chat_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The profile the text names, made as it says; then the chat, one question typed."""
    page = DOCS / "papers" / "amadeus.md"
    (block,) = marked_blocks(page, "test_the_profile_chat_runs")
    text = page.read_text(encoding="utf-8").split(block, 1)[0].rsplit("\n\n", 2)[-2]
    (made,) = re.findall(r"`(personae profile [^`]+)`", text.replace("\n", " "))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("What do you fight for?\n"))
    with kenshiro_web(monkeypatch):
        assert main(shlex.split(made)[1:]) == 0
        capsys.readouterr()
        code = main(shlex.split(block)[3:])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert ANSWER in out.out and Path("personas").is_dir()

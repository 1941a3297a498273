"""SECURITY.md, statement by statement: each one is mapped to the tests that verify it.

``CLAIMS`` maps every statement of SECURITY.md (a bullet, a row of the keys table, a
paragraph) to tests; the first test fails when SECURITY.md says something no test checks, or
names a test that does not exist. The tests below check the statements no other test did.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_web import FakeTavily, FakeWeb
from profiler_world import hokuto_wiki, profiler_context, scripted_model, web_results

from personae.cli import main
from personae.errors import RemoteError
from personae.graphs.characterhub.profiler import graph
from personae.loopback import LoopbackWebServer, WebRequest, WebResponse
from personae.testing import override_models
from personae.tools import web_search
from personae.tools.http import MAX_REDIRECTS, PoliteHttpClient
from personae.tools.web_search import TavilySearch

ROOT = Path(__file__).resolve().parents[1]
UA = "Personae-test/0.1 (+https://example.org)"
HERE = "tests/test_security_claims.py"

CLAIMS: dict[str, list[str]] = {
    "Schemes": [
        "tests/tools/test_web_search.py::test_non_web_result_urls_never_become_sources",
        "tests/characterhub/test_cli_profile_hostile_web.py::"
        "test_hostile_results_are_dropped_counted_and_reported",
    ],
    "Hosts": [
        "tests/tools/test_http.py::test_private_hosts_refused",
        "tests/tools/test_http.py::test_hostname_resolving_to_private_address_refused",
        "tests/tools/test_http.py::test_connection_goes_to_the_address_that_was_checked",
    ],
    "Configured hosts": [
        "tests/tools/test_http.py::test_configured_host_without_port_allows_only_the_web_ports",
        "tests/bookmarks/test_cli_data.py::test_fetch_downloads_then_skips",
    ],
    "Redirects": [
        f"{HERE}::test_at_most_five_redirects_are_followed",
        "tests/tools/test_http.py::test_public_host_allowed_and_redirect_rechecked",
        "tests/tools/test_http.py::test_caller_headers_are_not_sent_to_another_origin_on_redirect",
        "tests/bookmarks/test_hf_datasets.py::test_the_token_never_reaches_another_origin",
    ],
    "Sizes and time": [
        "tests/tools/test_http.py::test_size_cap_aborts",
        "tests/tools/test_http.py::test_size_cap_on_streamed_body_without_length",
        "tests/characterhub/test_cli_profile_hostile_web.py::"
        "test_an_over_size_character_page_is_skipped_and_the_profile_goes_on",
        "tests/tools/test_http_deadline.py::test_a_dripping_page_ends_at_its_deadline",
        "tests/tools/test_http_deadline.py::"
        "test_retries_of_a_dripping_page_stay_inside_the_retry_budget",
        f"{HERE}::test_the_documented_limits_are_the_defaults",
        "tests/tools/test_http.py::test_retry_after_is_honoured",
        "tests/tools/test_http.py::test_5xx_retried_with_backoff_then_raised",
        "tests/tools/test_http.py::test_serial_per_host_parallel_across_hosts",
        "tests/tools/test_http.py::test_user_agent_sent_and_body_decoded",
    ],
    "Parsing": [
        f"{HERE}::test_result_pages_are_parsed_off_the_event_loop",
        "tests/core/test_no_blocking_calls.py::test_every_graph_runs_under_the_servers_blocking_call_guard",
        "tests/tools/test_wiki_parser.py::"
        "test_deeply_nested_page_parses_without_hanging_and_keeps_its_text",
    ],
    "Proxies": [f"{HERE}::test_the_web_fetcher_ignores_proxy_variables"],
    "`personae bookmarks fetch` (Hugging Face Hub,": [
        "tests/bookmarks/test_hf_datasets.py::test_the_token_never_reaches_another_origin",
        "tests/bookmarks/test_hf_datasets.py::test_a_listing_paginating_to_another_origin_is_refused",
        "tests/bookmarks/test_hf_datasets.py::test_the_cloud_metadata_address_is_never_fetched",
        "tests/bookmarks/test_hf_datasets.py::test_downloads_are_capped_in_size",
        "tests/bookmarks/test_hf_datasets.py::test_unsafe_hub_paths_are_refused",
        "tests/bookmarks/test_hf_datasets.py::test_row_artifact_names_cannot_write_outside_dest",
        "tests/bookmarks/test_hf_datasets.py::test_an_artifact_name_too_long_for_a_file_is_one_error",
        "tests/bookmarks/test_hf_datasets.py::test_a_symlink_inside_dest_cannot_lead_out",
        "tests/bookmarks/test_hf_datasets.py::test_truncated_download_leaves_nothing",
    ],
    "OPENAI_API_KEY": [
        f"{HERE}::test_no_key_reaches_any_file_a_profile_writes",
        "tests/core/test_run_context.py::"
        "test_the_server_and_key_come_from_the_environment_and_the_key_never_travels",
    ],
    "TAVILY_API_KEY": [
        f"{HERE}::test_no_key_reaches_any_file_a_profile_writes",
        "tests/tools/test_http.py::test_caller_headers_are_not_sent_to_another_origin_on_redirect",
    ],
    "HF_TOKEN": [
        "tests/bookmarks/test_hf_datasets.py::test_the_token_never_reaches_another_origin",
        "tests/bookmarks/test_hf_datasets.py::test_a_listing_paginating_to_another_origin_is_refused",
        "tests/bookmarks/test_cli_data.py::test_endpoint_and_token_come_from_the_environment",
    ],
    "Profiles, cards, reports and caches": [
        f"{HERE}::test_no_key_reaches_any_file_a_profile_writes"
    ],
    "Web pages, search results, datasets and": [
        f"{HERE}::test_invented_source_ids_are_dropped_and_counted",
        "tests/characterhub/test_profile_store.py::test_hostile_titles_and_urls_stay_literal_in_profile_md",
        "tests/test_cli_hostile_input.py::test_bad_files_give_one_line_and_exit_2",
        "tests/test_cli_bad_input_round2.py::test_bad_input_is_one_line_and_exit_2",
    ],
}
"""Each statement of SECURITY.md (a bullet's bold name, a key, a paragraph's first words)."""


def statements(text: str) -> list[str]:
    """The statements of SECURITY.md's sections before "Reporting a problem"."""
    section = text.split("## Reporting a problem")[0].split("## What the web fetcher allows")[1]
    body = section.split("\n", 1)[1]  # after the heading's own line
    found = []
    for block in re.split(r"\n\s*\n", body):
        for line in block.splitlines():
            bullet = re.match(r"- \*\*(.+?)\*\*:", line)
            row = re.match(r"\| `([A-Z_]+)` \|", line)
            if bullet or row:
                found.append((bullet or row).group(1))  # type: ignore[union-attr]
        first = block.strip().splitlines()[0] if block.strip() else ""
        if first and not first.startswith(("- ", "|", "#", "Every request of")):
            found.append(" ".join(first.split()[:5]))
    return found


def _defined(node: str) -> bool:
    path, name = node.split("::")
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name for n in tree.body
    )


def test_every_statement_of_security_md_is_mapped_to_existing_tests() -> None:
    said = statements((ROOT / "SECURITY.md").read_text(encoding="utf-8"))
    keys = {" ".join(k.split()[:5]) if k not in said else k for k in CLAIMS}
    assert sorted(said) == sorted(keys), "a statement of SECURITY.md without tests, or a stale key"
    missing = [node for nodes in CLAIMS.values() for node in nodes if not _defined(node)]
    assert missing == []


async def test_at_most_five_redirects_are_followed() -> None:
    hops: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        hops.append(request.url.path)
        return httpx.Response(302, headers={"Location": f"/hop{len(hops)}"})

    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.215.14"]

    async with PoliteHttpClient(
        user_agent=UA, cache_dir=None, resolver=resolver, transport=httpx.MockTransport(handler)
    ) as client:
        with pytest.raises(RemoteError, match=f"redirected more than {MAX_REDIRECTS} times"):
            await client.get_text("https://loop.example/start")
    assert MAX_REDIRECTS == 5 and len(hops) == 6  # the request and five redirects


def test_the_documented_limits_are_the_defaults() -> None:
    client = PoliteHttpClient(user_agent=UA, cache_dir=None)
    assert (client.max_bytes, client.timeout, client.retry_budget) == (5_000_000, 20.0, 60.0)
    assert client.max_retries == 4


async def test_result_pages_are_parsed_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[threading.Thread] = []
    parse = web_search.extract_main_text  # type: ignore[attr-defined]

    def recording(html: str, *, max_chars: int = 4000) -> str:
        threads.append(threading.current_thread())
        return parse(html, max_chars=max_chars)

    monkeypatch.setattr(web_search, "extract_main_text", recording)
    page = "<article>" + "<p>Toki heals the sick of the wasteland villages.</p>" * 20 + "</article>"
    with LoopbackWebServer(lambda request: _tavily_or_page(request, page)) as server:
        host = server.url.split("//", 1)[1]
        async with PoliteHttpClient(user_agent=UA, cache_dir=None, allowed_hosts=[host]) as http:
            search = TavilySearch(api_key="tvly-x", http=http, base_url=server.url)
            [found] = await search.search("Toki")
    assert found.content.startswith("Toki heals the sick")
    assert threads and threads[0] is not threading.main_thread()


def _tavily_or_page(request: WebRequest, page: str) -> WebResponse:
    if request.path == "/search":
        host = request.headers.get("Host", "")
        return WebResponse(200, {"results": [{"url": f"http://{host}/toki", "content": ""}]})
    return WebResponse(200, page)


async def test_the_web_fetcher_ignores_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    with (
        LoopbackWebServer(lambda r: WebResponse(200, "proxied")) as proxy,
        LoopbackWebServer(lambda r: WebResponse(200, "direct")) as site,
    ):
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy"):
            monkeypatch.setenv(name, proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        host = site.url.split("//", 1)[1]
        async with PoliteHttpClient(user_agent=UA, cache_dir=None, allowed_hosts=[host]) as http:
            page = await http.get_text(site.url + "/x")
    assert page.text == "direct" and proxy.requests == []


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackWebServer]:
    tavily = FakeTavily(web_results, api_key="tvly-SECRET-tavily")
    with LoopbackWebServer(FakeWeb(tavily=tavily, wiki=hokuto_wiki()).route) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-SECRET-openai")
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-SECRET-tavily")
        monkeypatch.setenv("HF_TOKEN", "hf_SECRET-hub")
        monkeypatch.setenv("TAVILY_BASE_URL", server.url)
        monkeypatch.setenv("PERSONAE_MODEL", "openai:claims-test")
        override_models(specs={"openai:claims-test": scripted_model(score=0.9)})
        yield server


def test_no_key_reaches_any_file_a_profile_writes(
    secrets: LoopbackWebServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Profile, card, checkpoints, the HTTP cache and the -vv log hold no key."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PERSONAE_CACHE_DIR", str(cache))
    out = tmp_path / "profiles"
    argv = ["-vv", "profile", "Kenshiro", "--wiki", secrets.url, "--out", str(out)]
    assert main([*argv, "--max-rounds", "1"]) == 0
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "card.json" for p in written) and any(cache.rglob("*.json"))
    assert any(p.name == ".checkpoints.sqlite" for p in written)
    logged = capsys.readouterr()
    for secret in (b"sk-SECRET-openai", b"tvly-SECRET-tavily", b"hf_SECRET-hub"):
        assert [p for p in written if secret in p.read_bytes()] == []
        assert secret.decode() not in logged.out + logged.err
    searched = [r for r in secrets.requests if r.path == "/search"]
    assert searched and searched[0].headers["Authorization"] == "Bearer tvly-SECRET-tavily"


async def test_invented_source_ids_are_dropped_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = scripted_model(score=0.9)
    document = model.responders["ResearchDocument"]

    def inventing(messages: Any) -> dict[str, Any]:
        return {"document": document(messages)["document"] + "\n- A fact from nowhere [S99]"}

    model.responders["ResearchDocument"] = inventing
    override_models(specs={"openai:claims-test": model})
    tavily = FakeTavily(web_results, api_key="tvly-test")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    with LoopbackWebServer(FakeWeb(tavily=tavily, wiki=hokuto_wiki()).route) as server:
        result = await graph.ainvoke(
            {"name": "Kenshiro", "franchise": "Fist of the North Star", "wiki_url": server.url},
            context=profiler_context(server, "claims-test", method="paper"),
        )
    assert result["usage"]["dropped_ids"] >= 1 and "[S99]" not in result["drinfo"]
    assert json.dumps(result["sources"]).count('"id": "S99"') == 0
    await asyncio.sleep(0)

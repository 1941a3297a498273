"""The Hub download client against a loopback Hub: layout, skips, conversion, errors."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import pytest

from personae.errors import InputError, RemoteError
from personae.loopback import LoopbackWebServer, WebRequest, WebResponse, free_port
from personae.memory.bookmarks.storyline import load_storyline
from personae.tools.bookmarks.hf_datasets import (
    HubClient,
    HubFile,
    convert_rows,
    fetch_bookmarks,
    inside,
)
from personae.tools.http import PoliteHttpClient, shared_ssl_context

FANDOM = "KomeijiForce/Fine_Grained_Fandom_Benchmark_Action_Sequences"
BANDORI = "KomeijiForce/Bandori_Conversational_Benchmark_Action_Sequences"


def release_file(artifact: str, chapters: int, per_chapter: int, *, band: bool = False) -> bytes:
    """A small storyline in the release layout."""
    data = {
        f"Chapter {c}": [
            {"action": f"Kasumi: line {c}.{i}", "characters": ["Kasumi"]}
            if band
            else {"action": f"Tyrion acts {c}.{i}", "character": "Tyrion"}
            for i in range(per_chapter)
        ]
        for c in range(chapters)
    }
    return json.dumps(data).encode()


class FakeHub:
    """Serves ``repos[repo][path] = bytes``; ``page_size`` paginates the tree with Link."""

    def __init__(self, repos: dict[str, dict[str, bytes]], *, page_size: int = 0) -> None:
        self.repos = repos
        self.page_size = page_size
        self.lie_about_size: set[str] = set()
        self.base = ""

    def __call__(self, request: WebRequest) -> WebResponse:
        path = unquote(request.path)
        for repo, files in self.repos.items():
            tree = f"/api/datasets/{repo}/tree/main"
            if path == tree:
                return self._tree(repo, files, int(request.query.get("cursor", "0")))
            prefix = f"/datasets/{repo}/resolve/main/"
            if path.startswith(prefix) and path[len(prefix) :] in files:
                return WebResponse(200, files[path[len(prefix) :]])
        return WebResponse(404, {"error": "Repository not found"})

    def _tree(self, repo: str, files: dict[str, bytes], cursor: int) -> WebResponse:
        entries = [{"type": "directory", "path": "data", "oid": "0", "size": 0}]
        for name, body in files.items():
            size = len(body) + (7 if name in self.lie_about_size else 0)
            entries.append({"type": "file", "path": name, "oid": "1", "size": size})
        if not self.page_size:
            return WebResponse(200, entries)
        page = entries[cursor : cursor + self.page_size]
        headers = {}
        if cursor + self.page_size < len(entries):
            nxt = f"{self.base}/api/datasets/{repo}/tree/main?recursive=true&cursor={cursor + self.page_size}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        return WebResponse(200, page, headers)


UA = "Personae/test (+https://example.org; research bot)"


def small_hub() -> FakeHub:
    return FakeHub(
        {
            FANDOM: {
                "README.md": b"# card",
                "data/title2action_series.got.json": release_file("got", 3, 4),
                "data/all_characters.json": b'{"got": {"major": ["Tyrion"], "minor": []}}',
                "data/train-00000.parquet": b"PAR1",
            },
            BANDORI: {
                "data/title2action_series.Hello,_Happy_World!.json": release_file(
                    "h", 2, 5, band=True
                ),
                "data/title2action_series.Pastel*Palettes.json": release_file("p", 1, 3, band=True),
                "title2action_series.Poppin'Party.json": release_file("pp", 2, 2, band=True),
            },
        }
    )


async def test_fetch_writes_the_release_layout_with_awkward_names(tmp_path: Path) -> None:
    hub = small_hub()
    with LoopbackWebServer(hub) as server:
        async with HubClient(server.url, user_agent=UA, token="hf_x") as client:
            report = await fetch_bookmarks(client, tmp_path / "dest")
        requests = list(server.requests)
    names = sorted(p.name for p in (tmp_path / "dest").iterdir())
    assert names == [
        "all_characters.json",
        "title2action_series.Hello,_Happy_World!.json",
        "title2action_series.Pastel*Palettes.json",
        "title2action_series.Poppin'Party.json",
        "title2action_series.got.json",
    ]
    got = load_storyline(tmp_path / "dest/title2action_series.got.json")
    assert (len(got), len(got.chapters), got.major_characters) == (12, 3, ("Tyrion",))
    assert len(load_storyline(tmp_path / "dest/title2action_series.Hello,_Happy_World!.json")) == 10
    assert sorted(report.ignored) == [f"{FANDOM}/README.md", f"{FANDOM}/data/train-00000.parquet"]
    assert len(report.downloaded) == 5 and not report.skipped
    assert all(r.headers["User-Agent"] == UA for r in requests)
    assert all(r.headers["Authorization"] == "Bearer hf_x" for r in requests)
    resolved = [r.path for r in requests if "/resolve/" in r.path]
    assert any("Pastel%2APalettes" in p for p in resolved)  # quoted on the wire
    assert not list((tmp_path / "dest").glob(".*"))  # no temp files left


async def test_rerun_skips_files_already_present_with_the_same_size(tmp_path: Path) -> None:
    hub = small_hub()
    with LoopbackWebServer(hub) as server:
        async with HubClient(server.url, user_agent=UA) as client:
            await fetch_bookmarks(client, tmp_path)
            (tmp_path / "title2action_series.got.json").write_text("{}")  # damaged: size differs
            before = len(server.requests)
            report = await fetch_bookmarks(client, tmp_path)
        downloads = [r.path for r in server.requests[before:] if "/resolve/" in r.path]
    assert [p.name for p in report.downloaded] == ["title2action_series.got.json"]
    assert len(report.skipped) == 4 and len(downloads) == 1
    assert len(load_storyline(tmp_path / "title2action_series.got.json")) == 12


async def test_tree_pagination_is_followed(tmp_path: Path) -> None:
    hub = small_hub()
    hub.page_size = 2
    with LoopbackWebServer(hub) as server:
        hub.base = server.url
        async with HubClient(server.url, user_agent=UA) as client:
            files = await client.list_files(FANDOM)
    assert sorted(f.path for f in files) == sorted(hub.repos[FANDOM])


async def test_row_files_are_converted_to_the_release_layout(tmp_path: Path) -> None:
    rows = [
        {"artifact": "spy", "title": "Ep 1", "action": "Loid plans", "character": "Loid"},
        {"artifact": "spy", "title": "Ep 1", "action": "Anya reads minds", "character": "Anya"},
        {"artifact": "spy", "title": "Ep 2", "action": "Yor cooks", "characters": ["Yor"]},
    ]
    hub = FakeHub({FANDOM: {"rows/train.jsonl": "\n".join(map(json.dumps, rows)).encode()}})
    with LoopbackWebServer(hub) as server:
        async with HubClient(server.url, user_agent=UA) as client:
            report = await fetch_bookmarks(client, tmp_path, repos=(FANDOM,))
    assert [p.name for p in report.converted] == ["title2action_series.spy.json"]
    spy = load_storyline(tmp_path / "title2action_series.spy.json")
    assert spy.chapters == ("Ep 1", "Ep 2") and spy.actions[2].characters == ("Yor",)
    assert (
        tmp_path / "hub/Fine_Grained_Fandom_Benchmark_Action_Sequences/rows/train.jsonl"
    ).is_file()
    other = tmp_path / "other.json"
    other.write_text('[{"question": "x"}]')
    assert convert_rows(other, tmp_path) == []


async def test_missing_repo_fails_before_anything_is_written(tmp_path: Path) -> None:
    hub = FakeHub({FANDOM: {"data/title2action_series.got.json": release_file("got", 1, 1)}})
    with LoopbackWebServer(hub) as server:
        async with HubClient(server.url, user_agent=UA) as client:
            with pytest.raises(
                RemoteError, match=f"dataset {BANDORI} not found .*HTTP 404"
            ) as error:
                await fetch_bookmarks(client, tmp_path / "dest")
    assert error.value.exit_code == 3 and not (tmp_path / "dest").exists()


async def test_truncated_download_leaves_nothing(tmp_path: Path) -> None:
    hub = small_hub()
    hub.lie_about_size.add("data/title2action_series.got.json")
    with LoopbackWebServer(hub) as server:
        async with HubClient(server.url, user_agent=UA) as client:
            with pytest.raises(RemoteError, match="truncated"):
                await client.download(
                    FANDOM, HubFile("data/title2action_series.got.json", 999), tmp_path / "g.json"
                )
    assert list(tmp_path.iterdir()) == []


async def test_unreachable_endpoint_and_bad_urls_are_one_line_errors(tmp_path: Path) -> None:
    async with HubClient(f"http://127.0.0.1:{free_port()}", user_agent=UA, timeout=5) as client:
        client._http.max_retries = 0
        with pytest.raises(RemoteError, match="cannot reach http://127.0.0.1") as error:
            await client.list_files(FANDOM)
    assert "\n" not in str(error.value) and "HF_ENDPOINT" in str(error.value)
    with pytest.raises(InputError, match="not an http"):
        HubClient("ftp://mirror", user_agent=UA)


async def test_unsafe_hub_paths_are_refused(tmp_path: Path) -> None:
    hub = FakeHub({FANDOM: {"../escape.json": b"{}"}})
    with LoopbackWebServer(hub) as server:
        async with HubClient(server.url, user_agent=UA) as client:
            with pytest.raises(RemoteError, match="unsafe path"):
                await fetch_bookmarks(client, tmp_path / "dest", repos=(FANDOM,))
    assert not (tmp_path / "escape.json").exists()


async def test_fetch_the_real_shared_storylines(shared_dir: Path, tmp_path: Path) -> None:
    source = shared_dir / "data/bookmarks"
    files = {f"data/{p.name}": p.read_bytes() for p in source.iterdir() if p.suffix == ".json"}
    hub = FakeHub({FANDOM: files})
    with LoopbackWebServer(hub) as server:
        async with HubClient(server.url, user_agent=UA) as client:
            await fetch_bookmarks(client, tmp_path, repos=(FANDOM,))
    haruhi = load_storyline(tmp_path / "title2action_series.haruhi.json")
    assert (len(haruhi), len(haruhi.chapters)) == (991, 28) and haruhi.major_characters
    assert len(load_storyline(tmp_path / "title2action_series.Pastel*Palettes.json")) == 968


async def test_row_artifact_names_cannot_write_outside_dest(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    rows = [{"artifact": "../../escaped", "title": "1", "action": "x", "character": "A"}]
    hub = FakeHub({FANDOM: {"rows/train.jsonl": json.dumps(rows[0]).encode()}})
    with LoopbackWebServer(hub) as server:
        async with HubClient(server.url, user_agent=UA) as client:
            with pytest.raises(
                RemoteError, match="unsafe file 'title2action_series.../..."
            ) as error:
                await fetch_bookmarks(client, dest, repos=(FANDOM,))
    assert error.value.exit_code == 3
    assert not list(tmp_path.rglob("*escaped*"))
    for bad in ("a\\..\\b", "x\x00y", ".."):
        with pytest.raises(RemoteError, match="unsafe file"):
            inside(dest, bad, origin="rows")


def test_a_symlink_inside_dest_cannot_lead_out(tmp_path: Path) -> None:
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    (dest / "hub").symlink_to(outside, target_is_directory=True)
    with pytest.raises(RemoteError, match="outside"):
        inside(dest, "hub", "repo", "f.json", origin="repo/f.json")


async def test_downloads_are_capped_in_size(tmp_path: Path) -> None:
    big = release_file("got", 40, 40)
    hub = FakeHub({FANDOM: {"data/title2action_series.got.json": big}})
    with LoopbackWebServer(hub) as server:
        async with HubClient(server.url, user_agent=UA, max_bytes=len(big) - 1) as client:
            with pytest.raises(RemoteError, match="larger than the .*-byte download limit"):
                await fetch_bookmarks(client, tmp_path, repos=(FANDOM,))
            assert not [r for r in server.requests if "/resolve/" in r.path]  # refused: listing
            unlisted = HubFile("data/title2action_series.got.json", None)  # size not listed
            with pytest.raises(RemoteError, match="larger than the .*-byte download limit"):
                await client.download(FANDOM, unlisted, tmp_path / "g.json")
    hub.lie_about_size.add("data/title2action_series.got.json")
    with LoopbackWebServer(hub) as server:
        async with HubClient(server.url, user_agent=UA) as client:
            short = HubFile("data/title2action_series.got.json", len(big) - 100)  # says less
            with pytest.raises(RemoteError, match="sent more than the"):
                await client.download(FANDOM, short, tmp_path / "g.json")
    assert list(tmp_path.iterdir()) == []  # nothing half-written


async def test_the_hub_client_uses_the_process_tls_context() -> None:
    async with HubClient("https://huggingface.co", user_agent=UA) as client:
        pool = client._http._client._transport._pool  # type: ignore[attr-defined]
        assert pool._ssl_context is shared_ssl_context()


def one_file_hub(story: bytes, resolve: WebResponse | None, link: str = "") -> FakeHub:
    """A hub listing one storyline, answering its download with ``resolve`` when given."""
    hub = FakeHub({FANDOM: {"data/title2action_series.got.json": story}})
    plain = hub.__call__

    def route(request: WebRequest) -> WebResponse:
        if "/resolve/" in request.path and resolve is not None:
            return resolve
        answer = plain(request)
        if link and "/tree/" in request.path:
            answer.headers["Link"] = f'<{link}>; rel="next"'
        return answer

    hub.__call__ = route  # type: ignore[method-assign]
    return hub


def guarded(*servers: LoopbackWebServer) -> PoliteHttpClient:
    """The hub client's HTTP client with every given loopback origin configured."""
    hosts = [s.url.split("//", 1)[1] for s in servers]
    return PoliteHttpClient(user_agent=UA, cache_dir=None, allowed_hosts=hosts, max_retries=0)


async def test_the_token_never_reaches_another_origin(tmp_path: Path) -> None:
    """The Hub sends downloads to its CDN (another origin): the token stays with the Hub."""
    story = release_file("got", 2, 2)
    with LoopbackWebServer(lambda request: WebResponse(200, story)) as cdn:
        redirect = WebResponse(302, b"", {"Location": f"{cdn.url}/blobs/got.json"})
        hub = one_file_hub(story, redirect)
        with LoopbackWebServer(lambda request: hub.__call__(request)) as server:
            http = guarded(server, cdn)
            async with HubClient(server.url, user_agent=UA, token="hf_secret", http=http) as client:
                report = await fetch_bookmarks(client, tmp_path, repos=(FANDOM,))
            hub_headers = [r.headers for r in server.requests]
        cdn_headers = [r.headers for r in cdn.requests]
    assert [p.name for p in report.downloaded] == ["title2action_series.got.json"]
    assert hub_headers and all(h["Authorization"] == "Bearer hf_secret" for h in hub_headers)
    assert len(cdn_headers) == 1 and cdn_headers[0]["User-Agent"] == UA
    assert not any("hf_secret" in value for h in cdn_headers for value in h.values())


async def test_a_listing_paginating_to_another_origin_is_refused(tmp_path: Path) -> None:
    with LoopbackWebServer(lambda request: WebResponse(200, [])) as elsewhere:
        hub = one_file_hub(b"{}", None, link=f"{elsewhere.url}/api/datasets/x/tree/main")
        with LoopbackWebServer(lambda request: hub.__call__(request)) as server:
            http = guarded(server, elsewhere)
            async with HubClient(server.url, user_agent=UA, token="hf_secret", http=http) as client:
                with pytest.raises(RemoteError, match="points its next page to http://127"):
                    await fetch_bookmarks(client, tmp_path, repos=(FANDOM,))
        assert elsewhere.requests == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["redirect", "pagination"])
async def test_the_cloud_metadata_address_is_never_fetched(tmp_path: Path, where: str) -> None:
    metadata = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
    redirect = WebResponse(302, b"", {"Location": metadata})
    story = release_file("got", 1, 1)
    hub = (
        one_file_hub(story, redirect)
        if where == "redirect"
        else one_file_hub(story, None, link=metadata)
    )
    with LoopbackWebServer(lambda request: hub.__call__(request)) as server:
        async with HubClient(server.url, user_agent=UA, token="hf_secret") as client:
            with pytest.raises(RemoteError) as error:
                await fetch_bookmarks(client, tmp_path, repos=(FANDOM,))
    message = str(error.value)
    assert "169.254.169.254" in message and error.value.exit_code == 3
    if where == "redirect":
        assert "169.254.169.254 is not a public host" in message
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary file left


async def test_an_artifact_name_too_long_for_a_file_is_one_error(tmp_path: Path) -> None:
    rows = [{"artifact": "a" * 300, "title": "1", "action": "x", "character": "A"}]
    hub = FakeHub({FANDOM: {"rows/train.jsonl": json.dumps(rows[0]).encode()}})
    with LoopbackWebServer(hub) as server:
        async with HubClient(server.url, user_agent=UA) as client:
            with pytest.raises(RemoteError, match="longer than the 255 bytes a file name may"):
                await fetch_bookmarks(client, tmp_path, repos=(FANDOM,))

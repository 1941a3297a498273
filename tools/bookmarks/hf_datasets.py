"""Download client for the BOOKMARKS benchmark on the Hugging Face Hub.

Users without the benchmark fetch it from the two public datasets below. The client speaks the
Hub's plain HTTP API (list with ``/api/datasets/{repo}/tree/main?recursive=true``, download with
``/datasets/{repo}/resolve/main/{path}``) through the project's guarded web client, so the Hub
obeys the rules every other site does (public hosts, no token across origins), it needs no
``huggingface_hub`` dependency and can be pointed at a mirror (``HF_ENDPOINT``) or, in tests,
at a loopback server.

Layout assumed (the hub cannot be inspected from here): the datasets hold the release files
``title2action_series.<artifact>.json`` (+ ``all_characters.json``, ``band2members.json``),
possibly under a folder; those are written flat into the destination, which is the layout
:func:`personae.memory.bookmarks.storyline.load_storyline` reads. Any other JSON/JSONL file is kept under
``hub/<dataset>/`` and, when its rows carry ``artifact`` + ``action`` + ``character(s)``,
converted to the release layout. Other formats (parquet) are listed as ignored.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

from personae.errors import InputError, PersonaeError, RemoteError
from personae.files import parse_json, parse_jsonl, read_text, write_json_atomic
from personae.tools.http import (
    FetchedPage,
    HttpStatusError,
    PoliteHttpClient,
    TooLargeError,
    UnreachableError,
)
from personae.urls import web_url

logger = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "https://huggingface.co"
BOOKMARKS_DATASETS = (
    "KomeijiForce/Fine_Grained_Fandom_Benchmark_Action_Sequences",
    "KomeijiForce/Bandori_Conversational_Benchmark_Action_Sequences",
)
RELEASE_NAMES = re.compile(
    r"^(title2action_series\..+\.json|all_characters\.json|band2members\.json)$"
)
DEFAULT_MAX_BYTES = 1_000_000_000
"""Largest file downloaded (the storylines are a few MB each): a mirror, or a dataset gone
wrong, cannot fill the disk."""
MAX_LISTING_BYTES = 50_000_000
"""Largest file-listing answer read into memory."""
_UNSAFE_NAME = re.compile(r"[/\\\x00-\x1f]|^$")
"""A path part that is empty, or holds a separator (``/``, ``\\``) or a control character."""
_USABLE = (".json", ".jsonl")
MAX_NAME_BYTES = 255
"""Longest file name (in UTF-8 bytes) the usual file systems accept."""
_NEXT_LINK = re.compile(r'<([^>]+)>;\s*rel="next"')
MAX_LISTING_PAGES = 100
"""Most listing pages followed per dataset: the Hub pages 1,000 files at a time and these
datasets hold a few dozen, so a Hub still paginating after this is looping (it would otherwise
be asked, with the token, forever)."""


@dataclass(frozen=True)
class HubFile:
    """A file in a dataset repository."""

    path: str
    """Path inside the repository, e.g. ``data/title2action_series.haruhi.json``."""
    size: int | None
    """Size in bytes as the Hub reports it (LFS size for LFS files)."""


@dataclass
class FetchReport:
    """What a fetch did, for the CLI to print."""

    downloaded: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    """Already present with the same size."""
    converted: list[Path] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    """``repo/path`` of files in a format this client does not use."""


class HubClient:
    """Minimal Hugging Face Hub client for dataset repositories, on the guarded web client.

    Every request goes through :class:`~personae.tools.http.PoliteHttpClient`: the endpoint
    (configured by the user, so it may be a mirror on a private network) and public hosts only,
    every redirect hop checked the same way (a redirect to 169.254.169.254 is refused), the
    token sent as a header of each request and dropped on a redirect to another origin (the
    Hub sends downloads to its CDN), retries with backoff, one deadline per attempt. The
    listing's ``Link`` pagination is followed on the endpoint's origin only.
    """

    def __init__(
        self,
        endpoint: str = DEFAULT_ENDPOINT,
        *,
        user_agent: str,
        token: str | None = None,
        timeout: float = 60.0,
        max_bytes: int = DEFAULT_MAX_BYTES,
        http: PoliteHttpClient | None = None,
    ) -> None:
        """Talk to ``endpoint`` with an honest User-Agent and an optional bearer ``token``.

        ``max_bytes`` caps each downloaded file (and a file the listing says is larger is not
        requested); a listing answer is capped at ``MAX_LISTING_BYTES``. ``timeout`` is the
        deadline of one listing request, and of a download plus one second per MB it lists.
        """
        self.endpoint = web_url(endpoint, "the Hub endpoint", DEFAULT_ENDPOINT).rstrip("/")
        parts = urlsplit(self.endpoint)
        self.max_bytes = max_bytes
        self.timeout = timeout
        self._origin = (parts.scheme, parts.netloc.lower())
        self._auth = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = http or PoliteHttpClient(
            user_agent=user_agent,
            cache_dir=None,
            allowed_hosts=[parts.netloc],
            timeout=timeout,
            max_bytes=MAX_LISTING_BYTES,
        )

    async def __aenter__(self) -> HubClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP connection pool."""
        await self._http.aclose()

    async def list_files(self, repo: str) -> list[HubFile]:
        """Every file of ``repo`` at ``main`` (follows the tree API's pagination)."""
        url: str | None = f"{self.endpoint}/api/datasets/{repo}/tree/main?recursive=true"
        files: list[HubFile] = []
        visited: set[str] = set()
        while url:
            if url in visited:
                raise RemoteError(
                    f"the file listing of {repo} at {self.endpoint} loops (its next page is "
                    "one it already sent)",
                    "check the endpoint (HF_ENDPOINT / --endpoint); a Hub's pages end",
                )
            if len(visited) == MAX_LISTING_PAGES:
                raise RemoteError(
                    f"the file listing of {repo} at {self.endpoint} goes on past "
                    f"{MAX_LISTING_PAGES} pages",
                    "check the endpoint (HF_ENDPOINT / --endpoint); the dataset holds a few "
                    "dozen files",
                )
            visited.add(url)
            page = await self._get(url, repo)
            entries = _json_list(_listing(page, repo), repo)
            files += [_hub_file(e) for e in entries if e.get("type") == "file"]
            url = self._next_page(page.headers.get("link", ""), repo)
        return files

    def _next_page(self, link: str, repo: str) -> str | None:
        """The listing's next page; only on the endpoint's origin (the token goes there)."""
        match = _NEXT_LINK.search(link)
        if match is None:
            return None
        url = urljoin(self.endpoint + "/", str(match.group(1)))
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc.lower()) != self._origin:
            raise RemoteError(
                f"the file listing of {repo} points its next page to {url[:200]}, off {self.endpoint}",
                "check the endpoint (HF_ENDPOINT / --endpoint); a Hub paginates on its own site",
            )
        return url

    async def download(self, repo: str, file: HubFile, target: Path) -> None:
        """Stream ``file`` into ``target`` atomically; a failure leaves nothing behind."""
        url = f"{self.endpoint}/datasets/{repo}/resolve/main/{quote(file.path, safe='/')}"
        if file.size is not None and file.size > self.max_bytes:
            raise self._too_big(repo, file.path)
        limit = self.max_bytes if file.size is None else file.size
        deadline = self.timeout + (file.size or 0) / 1_000_000  # at least 1 MB/s
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as handle:
                try:
                    await self._http.download(
                        url, handle, headers=self._auth, max_bytes=limit, timeout=deadline
                    )
                except TooLargeError:
                    raise self._too_big(repo, file.path, listed=file.size) from None
                except PersonaeError as error:
                    raise self._remote(error, repo) from None
                handle.flush()
                os.fsync(handle.fileno())
            written = Path(tmp).stat().st_size
            if file.size is not None and written != file.size:
                raise RemoteError(
                    f"{repo}/{file.path} arrived truncated ({written} of {file.size} bytes)",
                    "rerun the command",
                )
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _too_big(self, repo: str, path: str, listed: int | None = None) -> RemoteError:
        if listed is not None and listed <= self.max_bytes:
            return RemoteError(
                f"{repo}/{path} sent more than the {listed:,} bytes the listing gave",
                "rerun the command; if it persists the mirror is broken",
            )
        return RemoteError(
            f"{repo}/{path} is larger than the {self.max_bytes:,}-byte download limit",
            "raise the limit with --max-mb if the file is expected to be this large",
        )

    async def _get(self, url: str, repo: str) -> FetchedPage:
        """The listing page at ``url`` (at most ``MAX_LISTING_BYTES``)."""
        try:
            return await self._http.request("GET", url, headers=self._auth)
        except TooLargeError:
            raise RemoteError(
                f"the file listing of {repo} is over {MAX_LISTING_BYTES:,} bytes",
                "check the endpoint (HF_ENDPOINT / --endpoint)",
            ) from None
        except PersonaeError as error:
            raise self._remote(error, repo) from None

    def _remote(self, error: PersonaeError, repo: str) -> PersonaeError:
        """The guarded client's error in the Hub's terms (which dataset, which setting)."""
        if isinstance(error, UnreachableError):
            return RemoteError(
                f"cannot reach {self.endpoint} ({error.problem})",
                "check the connection, or set HF_ENDPOINT / --endpoint to a reachable mirror",
            )
        if not isinstance(error, HttpStatusError):
            return error  # a refused redirect, too many redirects: already says what and why
        if error.status == 404:
            return RemoteError(
                f"dataset {repo} not found at {self.endpoint} (HTTP 404)",
                "check the endpoint (HF_ENDPOINT / --endpoint)",
            )
        if error.status in (401, 403):
            return RemoteError(
                f"{self.endpoint} refused access to {repo} (HTTP {error.status})",
                "set HF_TOKEN to a valid token",
            )
        return RemoteError(
            f"{self.endpoint} answered HTTP {error.status} for {repo}", "retry later"
        )


def _listing(page: FetchedPage, repo: str) -> Any:
    try:
        return parse_json(page.text, f"the file listing of {repo}")
    except InputError as error:
        logger.info("unreadable Hub answer: %s", error)
        return None


def _json_list(data: Any, repo: str) -> list[dict[str, Any]]:
    if not isinstance(data, list):
        raise RemoteError(f"the file listing of {repo} is not a JSON list", "check the endpoint")
    return [entry for entry in data if isinstance(entry, dict)]


def _hub_file(entry: dict[str, Any]) -> HubFile:
    lfs = entry.get("lfs")
    size = lfs.get("size") if isinstance(lfs, dict) else entry.get("size")
    return HubFile(str(entry.get("path", "")), int(size) if isinstance(size, int) else None)


def _safe_relative(path: str, repo: str) -> PurePosixPath:
    relative = PurePosixPath(path)
    if (
        relative.is_absolute()
        or not relative.parts
        or any(part in ("..", ".") or _UNSAFE_NAME.search(part) for part in relative.parts)
    ):
        raise RemoteError(f"{repo} lists an unsafe path {path!r}", "report it to the dataset owner")
    return relative


def inside(dest: Path, *parts: str, origin: str) -> Path:
    """``dest`` joined with ``parts`` (names that came from downloaded data), never outside it.

    Each part must be a plain file or folder name; the resolved result must still lie under
    ``dest`` (a symlink inside ``dest`` cannot lead out either). ``origin`` names the data in
    the error.
    """
    for part in parts:
        if part in (".", "..") or _UNSAFE_NAME.search(part) or "/" in part:
            raise RemoteError(
                f"{origin} names an unsafe file {part[:80]!r}", "report it to the dataset owner"
            )
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise RemoteError(
                f"{origin} names a file of {len(part)} characters ({part[:40]!r}...), longer "
                f"than the {MAX_NAME_BYTES} bytes a file name may have",
                "report it to the dataset owner",
            )
    target = dest.joinpath(*parts)
    root = dest.resolve()
    if not target.resolve().is_relative_to(root):
        raise RemoteError(
            f"{origin} would write {target} outside {dest}", "report it to the dataset owner"
        )
    return target


async def fetch_bookmarks(
    client: HubClient, dest: Path, repos: tuple[str, ...] = BOOKMARKS_DATASETS
) -> FetchReport:
    """Download the benchmark into ``dest`` in the release layout; skip what is already there.

    Every repository is listed before anything is written, so a missing dataset or an
    unreachable endpoint fails before any download.
    """
    listings = {repo: await client.list_files(repo) for repo in repos}
    report = FetchReport()
    for repo, files in listings.items():
        for file in files:
            relative = _safe_relative(file.path, repo)
            if relative.suffix not in _USABLE:
                report.ignored.append(f"{repo}/{file.path}")
                continue
            release = RELEASE_NAMES.match(relative.name)
            origin = f"{repo}/{file.path}"
            target = (
                inside(dest, relative.name, origin=origin)
                if release
                else inside(dest, "hub", repo.split("/")[-1], *relative.parts, origin=origin)
            )
            if target.is_file() and file.size is not None and target.stat().st_size == file.size:
                report.skipped.append(target)
            else:
                await client.download(repo, file, target)
                report.downloaded.append(target)
            if not release:
                report.converted += await asyncio.to_thread(convert_rows, target, dest)
    if not report.downloaded and not report.skipped:
        raise RemoteError(
            f"no JSON files found in {', '.join(repos)}",
            "the datasets may have changed format; get the files from the BOOKMARKS release",
        )
    return report


def _rows(path: Path) -> Iterator[Any]:
    text = read_text(path)
    if path.suffix == ".jsonl":
        yield from (row for _, row in parse_jsonl(text, str(path)))
        return
    data = parse_json(text, str(path))
    yield from (data if isinstance(data, list) else [])


def convert_rows(path: Path, dest: Path) -> list[Path]:
    """Turn a row file into ``title2action_series.<artifact>.json`` files.

    Rows are ``{artifact, title|chapter|episode, action, character|characters}``; release
    files already present are left alone. Returns the files written; a file that is not in this row shape is left as it is.
    """
    grouped: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        for row in _rows(path):
            if not (isinstance(row, dict) and isinstance(row.get("artifact"), str)):
                return []
            if "action" not in row or not ({"character", "characters"} & row.keys()):
                return []
            chapter = str(row.get("title") or row.get("chapter") or row.get("episode") or "")
            kept = {k: row[k] for k in ("action", "character", "characters") if k in row}
            grouped.setdefault(row["artifact"], {}).setdefault(chapter, []).append(kept)
    except InputError as error:
        logger.info("unreadable Hub answer: %s", error)
        return []
    written = []
    for artifact, chapters in grouped.items():
        target = inside(dest, f"title2action_series.{artifact}.json", origin=f"{path}'s rows")
        if not target.exists():
            write_json_atomic(target, chapters)
            written.append(target)
    return written

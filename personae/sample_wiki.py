"""A small MediaWiki site on loopback: saved pages served with the Action API.

Why in the package: the Getting started tour profiles a character from a wiki without the
internet (``python -m personae.sample_wiki examples/data/wiki``), and the test suite fakes every
wiki the same way, so the profiler's own wiki client, parser and discovery run unchanged
against it. Responses copy the real shapes (MediaWiki 1.39 Action API, ``formatversion=2``):
``meta=siteinfo``, ``list=search`` (with ``sroffset`` continuation), ``action=parse``
(``redirects=1``, ``error.code = missingtitle``) and ``GET /wiki/<Title>`` article pages that
announce the API with ``<link rel="EditURI">``.
"""

from __future__ import annotations

import argparse
import html as _html
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from bs4 import BeautifulSoup, Tag

from personae.loopback import LoopbackWebServer, WebRequest, WebResponse


def normalize_title(title: str) -> str:
    """MediaWiki title normalisation: underscores to spaces, collapsed spaces, first letter upper."""
    title = re.sub(r"[\s_]+", " ", unquote(title)).strip()
    return title[:1].upper() + title[1:]


class MediaWikiSite:
    """A MediaWiki (Fandom-like) site: Action API at ``api_path`` and article pages at ``/wiki/``.

    ``pages`` maps titles to HTML: either an article fragment (what ``action=parse`` returns) or
    a full saved page (``<html>…``), whose ``.mw-parser-output`` becomes the parse text.
    ``redirects`` maps alias titles to targets. ``search_hits`` pins ``list=search`` results per
    query; otherwise search matches pages containing every query word (title or text), best
    first. Supported: ``meta=siteinfo``, ``list=search`` (with ``sroffset`` continuation),
    ``action=parse`` (``redirects=1``, ``error.code = missingtitle``), ``GET /wiki/<Title>``.
    ``mount`` is a path prefix when a combiner serves the wiki under a sub-path.
    """

    def __init__(
        self,
        pages: Mapping[str, str],
        *,
        api_path: str = "/api.php",
        redirects: Mapping[str, str] | None = None,
        search_hits: Mapping[str, list[str]] | None = None,
        sitename: str = "Fake Wiki",
    ) -> None:
        self.pages = {normalize_title(t): h for t, h in pages.items()}
        self.api_path = api_path
        self.redirects = {
            normalize_title(a): normalize_title(b) for a, b in (redirects or {}).items()
        }
        self.search_hits = dict(search_hits or {})
        self.sitename = sitename
        self.mount = ""
        self.search_batch = 50
        """Most hits per ``list=search`` answer (real wikis cap ``srlimit``); lower it to force continuation."""
        self.calls: list[dict[str, str]] = []
        self.announce_api = True
        """Article pages carry ``<link rel="EditURI">`` pointing at the API, as MediaWiki's do."""
        self.server_url = ""
        """Absolute origin put in the EditURI link (empty: a root-relative link)."""

    def route(self, request: WebRequest) -> WebResponse:
        """Serve one request addressed to this wiki (path without ``mount``)."""
        if request.path == self.api_path:
            self.calls.append(dict(request.query))
            return WebResponse(200, self._api(request))
        if request.path.startswith("/wiki/"):
            return self._article(normalize_title(request.path[len("/wiki/") :]))
        return WebResponse(404, "<html><body><h1>Not Found</h1></body></html>")

    def _server(self, request: WebRequest) -> str:
        headers = {k.lower(): v for k, v in request.headers.items()}
        return f"http://{headers.get('host', '127.0.0.1')}"

    def _api(self, request: WebRequest) -> dict[str, Any]:
        query = request.query
        action = query.get("action", "")
        if action == "query" and query.get("meta") == "siteinfo":
            return self._siteinfo(request)
        if action == "query" and query.get("list") == "search":
            return self._search(query)
        if action == "parse":
            return self._parse(query)
        return {
            "error": {
                "code": "badvalue",
                "info": f'Unrecognized value for parameter "action": {action}.',
            }
        }

    def _siteinfo(self, request: WebRequest) -> dict[str, Any]:
        server = self._server(request)
        script_dir = self.mount + self.api_path.rsplit("/", 1)[0]
        return {
            "batchcomplete": True,
            "query": {
                "general": {
                    "mainpage": "Main Page",
                    "base": f"{server}{self.mount}/wiki/Main_Page",
                    "sitename": self.sitename,
                    "generator": "MediaWiki 1.39.7",
                    "lang": "en",
                    "server": server,
                    "articlepath": f"{self.mount}/wiki/$1",
                    "scriptpath": script_dir,
                    "script": f"{script_dir}/index.php",
                }
            },
        }

    def _search(self, query: Mapping[str, str]) -> dict[str, Any]:
        text = query.get("srsearch", "")
        limit = min(int(query.get("srlimit") or 10), self.search_batch)
        offset = int(query.get("sroffset") or 0)
        titles = self._search_titles(text)
        page = titles[offset : offset + limit]
        hits = [
            {
                "ns": 0,
                "title": title,
                "pageid": self._pageid(title),
                "size": len(self.pages.get(title, "")),
                "wordcount": len(self._plain(title).split()),
                "snippet": self._snippet(title, text),
                "timestamp": "2024-01-01T00:00:00Z",
            }
            for title in page
        ]
        answer: dict[str, Any] = {
            "batchcomplete": True,
            "query": {"searchinfo": {"totalhits": len(titles)}, "search": hits},
        }
        if offset + limit < len(titles):
            answer["continue"] = {"sroffset": offset + limit, "continue": "-||"}
        return answer

    def _search_titles(self, text: str) -> list[str]:
        if text in self.search_hits:
            return [normalize_title(t) for t in self.search_hits[text]]
        words = [w.casefold() for w in re.findall(r"\w+", text)]
        scored = []
        for title in self.pages:
            haystack = f"{title} {self._plain(title)}".casefold()
            if words and all(w in haystack for w in words):
                in_title = sum(w in title.casefold() for w in words)
                scored.append((-in_title, -sum(haystack.count(w) for w in words), title))
        return [title for *_, title in sorted(scored)]

    def _parse(self, query: Mapping[str, str]) -> dict[str, Any]:
        title = normalize_title(query.get("page", ""))
        redirects = []
        if query.get("redirects") and title in self.redirects:
            redirects.append({"from": title, "to": self.redirects[title]})
            title = self.redirects[title]
        if title not in self.pages:
            return {
                "error": {
                    "code": "missingtitle",
                    "info": "The page you specified doesn't exist.",
                    "docref": "See /api.php for API usage.",
                }
            }
        fragment = self._fragment(title)
        parsed: dict[str, Any] = {
            "title": title,
            "pageid": self._pageid(title),
            "redirects": redirects,
        }
        props = set(query.get("prop", "text|sections|displaytitle").split("|"))
        if "text" in props:
            parsed["text"] = fragment
        if "sections" in props:
            parsed["sections"] = self._sections(title, fragment)
        if "displaytitle" in props:
            parsed["displaytitle"] = _html.escape(title)
        return {"parse": parsed}

    def _article(self, title: str) -> WebResponse:
        if title in self.redirects:
            target = quote(self.redirects[title].replace(" ", "_"))
            return WebResponse(301, "", {"Location": f"{self.mount}/wiki/{target}"})
        if title not in self.pages:
            return WebResponse(
                404, "<html><body><h1>There is currently no text in this page.</h1></body></html>"
            )
        raw = self.pages[title]
        if "<html" in raw[:2000].lower():
            return WebResponse(200, raw)
        api = f"{self.server_url}{self.mount}{self.api_path}?action=rsd"
        head = (
            f'<link rel="EditURI" type="application/rsd+xml" href="{_html.escape(api)}"/>'
            if self.announce_api
            else ""
        )
        page = (
            f"<!DOCTYPE html><html><head><title>{_html.escape(title)} | {_html.escape(self.sitename)}"
            f'</title>{head}</head><body><h1 id="firstHeading" class="page-header__title">'
            f'{_html.escape(title)}</h1><div id="mw-content-text">{self._fragment(title)}</div>'
            "</body></html>"
        )
        return WebResponse(200, page)

    def _fragment(self, title: str) -> str:
        raw = self.pages[title]
        if "<html" in raw[:2000].lower():
            soup = BeautifulSoup(raw, "lxml")
            output = soup.select_one("#mw-content-text .mw-parser-output") or soup.body
            return str(output) if output is not None else ""
        if "mw-parser-output" in raw[:500]:
            return raw
        return f'<div class="mw-parser-output">{raw}</div>'

    def _sections(self, title: str, fragment: str) -> list[dict[str, Any]]:
        soup = BeautifulSoup(fragment, "lxml")
        for box in soup.select("aside.portable-infobox"):
            box.decompose()
        sections = []
        for number, heading in enumerate(soup.find_all(["h2", "h3"]), start=1):
            assert isinstance(heading, Tag)
            line = heading.get_text(" ", strip=True).replace("[edit]", "").strip()
            anchor = line.replace(" ", "_")
            sections.append(
                {
                    "toclevel": 1 if heading.name == "h2" else 2,
                    "level": heading.name[1],
                    "line": line,
                    "number": str(number),
                    "index": str(number),
                    "fromtitle": title.replace(" ", "_"),
                    "byteoffset": None,
                    "anchor": anchor,
                    "linkAnchor": anchor,
                }
            )
        return sections

    def _plain(self, title: str) -> str:
        raw = self.pages.get(title, "")
        return BeautifulSoup(raw, "lxml").get_text(" ", strip=True) if raw else ""

    def _snippet(self, title: str, text: str) -> str:
        plain = _html.escape(self._plain(title)[:180])
        for word in set(re.findall(r"\w+", text)):
            plain = re.sub(
                rf"(?i)\b({re.escape(word)})\b", r'<span class="searchmatch">\1</span>', plain
            )
        return plain

    def _pageid(self, title: str) -> int:
        return 1000 + sorted(self.pages).index(title) if title in self.pages else 0


def saved_pages(folder: Path) -> dict[str, str]:
    """The pages of ``folder``: each ``Title_With_Underscores.html`` under its title."""
    pages = {
        path.stem.replace("_", " "): path.read_text(encoding="utf-8")
        for path in sorted(folder.glob("*.html"))
    }
    if not pages:
        raise SystemExit(f"sample_wiki: no .html page in {folder}: give a folder of saved pages")
    return pages


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a folder of saved pages as a wiki on 127.0.0.1 until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m personae.sample_wiki", description=main.__doc__
    )
    parser.add_argument("folder", type=Path, help="a folder of saved pages (Title.html)")
    parser.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    parser.add_argument("--name", default="Sample Wiki", help="the wiki's site name")
    args = parser.parse_args(argv)
    site = MediaWikiSite(saved_pages(args.folder), sitename=args.name)
    with LoopbackWebServer(site.route, port=args.port) as server:
        sys.stdout.write(
            f"{args.name} at {server.url} (pages: {', '.join(site.pages)}); Ctrl-C stops it\n"
        )
        sys.stdout.flush()
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

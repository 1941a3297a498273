"""A small, safe subset of Markdown as HTML, for the text a profile carries.

A profile's prose and its deep-search notes (``drinfo``) are model output over web pages: they
are escaped first, and only then does this module add the few tags it knows (paragraphs,
headings, lists, quotes, bold, italic, code, ``[S1]`` citations as links to the page's own
sources, and ``[text](http...)`` links). No raw HTML passes, no ``javascript:`` link can be
made, so the page needs no Markdown package at run time.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

_BACKSLASHED = re.compile(r"\\([\\`*_{}\[\]()<>#+!|~.-])")
_ENTITY = re.compile(r"&amp;(#[0-9]{1,7}|#x[0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});")
_CODE = re.compile(r"`([^`]+)`")
_STRONG = re.compile(r"\*\*(.+?)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*])[*_](?![\s*_])(.+?)(?<![\s*_])[*_](?![\w*])")
_CITATION = re.compile(r"\[(S\d+(?:,\s*S\d+)*)\]")
_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^\s()]+)\)")
_HEADING = re.compile(r"(#{1,6})\s+(.*)")
_ITEM = re.compile(r"[-*+]\s+(.*)")


def _cite(match: re.Match[str]) -> str:
    ids = [part.strip() for part in match.group(1).split(",")]
    links = ", ".join(f'<a class="cite" href="#source-{i}">{i}</a>' for i in ids)
    return f"[{links}]"


def inline_html(text: str) -> str:
    """One line: escaped, then code, bold, italic, citations and http(s) links."""
    html = str(escape(text))
    html = _BACKSLASHED.sub(lambda m: f"&#{ord(m.group(1))};", html)
    html = _ENTITY.sub(r"&\1;", html)
    html = _CODE.sub(r"<code>\1</code>", html)
    html = _STRONG.sub(r"<strong>\1</strong>", html)
    html = _EMPHASIS.sub(r"<em>\1</em>", html)
    html = _LINK.sub(r'<a href="\2" rel="noopener noreferrer">\1</a>', html)
    return _CITATION.sub(_cite, html)


class _Blocks:
    """The HTML blocks of a text, built line by line (one open paragraph, list or quote)."""

    def __init__(self, heading_level: int) -> None:
        self.heading_level = heading_level
        self.html: list[str] = []
        self.paragraph: list[str] = []
        self.items: list[str] = []
        self.quote: list[str] = []

    def flush(self) -> None:
        if self.paragraph:
            self.html.append(f"<p>{' '.join(inline_html(line) for line in self.paragraph)}</p>")
        if self.items:
            items = "".join(f"<li>{inline_html(item)}</li>" for item in self.items)
            self.html.append(f"<ul>{items}</ul>")
        if self.quote:
            inner = markdown_html("\n".join(self.quote), heading_level=self.heading_level)
            self.html.append(f"<blockquote>{inner}</blockquote>")
        self.paragraph, self.items, self.quote = [], [], []

    def add(self, line: str) -> None:
        if line.startswith(">"):
            if not self.quote:
                self.flush()
            self.quote.append(line[1:].removeprefix(" "))
            return
        heading, item = _HEADING.fullmatch(line), _ITEM.fullmatch(line)
        if self.quote or not line or heading or (item and self.paragraph):
            self.flush()
        if heading:
            level = min(6, self.heading_level + len(heading.group(1)) - 1)
            self.html.append(f"<h{level}>{inline_html(heading.group(2))}</h{level}>")
        elif item:
            self.items.append(item.group(1))
        elif line:
            if self.items:
                self.flush()
            self.paragraph.append(line)


def markdown_html(text: str, *, heading_level: int = 3) -> Markup:
    """``text`` as HTML blocks; a ``#`` heading becomes ``<h{heading_level}>`` and below."""
    blocks = _Blocks(heading_level)
    for line in text.splitlines():
        blocks.add(line.strip())
    blocks.flush()
    return Markup("\n".join(blocks.html))  # noqa: S704 - every piece was escaped first

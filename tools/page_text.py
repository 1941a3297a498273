"""Main-text extraction from arbitrary web pages, for search results that arrive without content.

Web search sometimes returns a URL with an empty snippet; the profiler still needs a passage to
cite. This keeps the paragraphs of the densest content block and drops page chrome (navigation,
headers, footers, sidebars, forms, scripts), without any site-specific rules.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Tag

CHROME = (
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "svg",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "button",
    "[role=navigation]",
    "[role=banner]",
    "[role=contentinfo]",
    "[aria-hidden=true]",
)
"""Elements that are page chrome, never the article."""
TEXT_BLOCKS = ("p", "li", "blockquote", "pre", "h1", "h2", "h3", "dd")
MIN_PARAGRAPH = 25
"""Shorter paragraphs are usually buttons, captions or bylines."""


def extract_main_text(html: str, *, max_chars: int = 4000) -> str:
    """The readable main text of ``html``: paragraphs of the densest block, capped at ``max_chars``.

    Args:
        html: A whole web page.
        max_chars: Length cap; the text is cut at a word boundary.
    """
    soup = BeautifulSoup(html, "lxml")
    for selector in CHROME:
        for node in soup.select(selector):
            node.decompose()
    root = _densest_block(soup)
    paragraphs = [_squash(node.get_text(" ")) for node in root.find_all(TEXT_BLOCKS)]
    kept = [p for p in paragraphs if len(p) >= MIN_PARAGRAPH]
    text = "\n".join(_dedupe(kept)) or _squash(root.get_text(" "))
    return cut_at_word(text, max_chars)


def cut_at_word(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at a word boundary when there is one."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    return (cut[:space] if space > limit // 2 else cut).rstrip()


def _densest_block(soup: BeautifulSoup) -> Tag:
    for selector in ("article", "main", "[role=main]"):
        found = soup.select_one(selector)
        if found is not None and len(found.get_text(strip=True)) > 200:
            return found
    best: Tag | None = None
    best_score = 0
    for block in soup.find_all(["div", "section", "td", "body"]):
        if not isinstance(block, Tag):
            continue
        score = sum(len(p.get_text(strip=True)) for p in block.find_all("p", recursive=False))
        if score > best_score:
            best, best_score = block, score
    if best is not None:
        return best
    return soup.body if soup.body is not None else soup


def _dedupe(lines: list[str]) -> list[str]:
    seen: set[str] = set()
    kept = []
    for line in lines:
        if line not in seen:
            seen.add(line)
            kept.append(line)
    return kept


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\xa0", " ")).strip()

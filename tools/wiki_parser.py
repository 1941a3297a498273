"""Parse a wiki page's HTML (full Fandom page or ``action=parse`` fragment) into a ``WikiPage``.

The profiler cites wiki text and the profile evaluation compares against infobox facts, so the
text must be clean: no citation marks, edit links, navboxes, galleries or tables of contents, and
infobox group headers (rendered as ``<h2>`` by portable infoboxes) must never become sections.
The infobox is therefore lifted out of the tree before the body is split on ``h2``/``h3``.
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass

from bs4 import BeautifulSoup, Tag
from bs4.element import CData, NavigableString, PageElement

from personae.tools.wiki_page import InfoboxField, WikiPage, WikiSection

NOISE_SELECTORS = (
    "script",
    "style",
    "noscript",
    "link",
    "meta",
    ".mw-editsection",
    ".editsection",
    "sup.reference",
    "sup.noprint",
    ".mw-ref",
    "#toc",
    ".toc",
    ".navbox",
    "table.navbox",
    ".wikia-gallery",
    ".gallery",
    "ul.gallery",
    ".hatnote",
    ".messagebox",
    ".ambox",
    ".mbox",
    "table.metadata",
    ".noprint",
    ".dablink",
    ".mw-empty-elt",
    ".printfooter",
    "#catlinks",
    ".thumb",
    "figure",
    ".reference-text .mw-cite-backlink",
)
"""Elements whose text never belongs in a passage."""
BLOCK_TAGS = (
    "p",
    "div",
    "li",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "tr",
    "table",
    "blockquote",
    "pre",
    "h4",
    "h5",
    "h6",
)
"""Tags that end a line when the body is flattened to text."""
SECTION_TAGS = ("h2", "h3")
MAX_DEPTH = 256
"""Nesting below this depth is read as plain text (no more line breaks): a bound, not a limit
real pages reach (a Fandom article nests about 20 deep)."""
_TEXT_TYPES = (NavigableString, CData)
"""String kinds that are page text (comments, doctypes and processing instructions are not)."""
_MARK = "\x00"
_ITEM = "\x1f"
_CITATION = re.compile(r"\[(?:\d+|[a-z]|citation needed|edit|note \d+)\]", re.IGNORECASE)
_EDIT_BRACKETS = re.compile(r"\s*\[\s*(?:edit(?: source)?)?\s*\]\s*$", re.IGNORECASE)
_MAY_REFER = re.compile(r"\bmay (?:also )?refer to\b|\bcan refer to\b", re.IGNORECASE)
_DISAMBIG_CATEGORY = re.compile(r"wgCategories\"?\s*[:=]\s*\[[^\]]*Disambiguation", re.IGNORECASE)
_TITLE_SUFFIX = re.compile(r"\s*\|.*$")


@dataclass(frozen=True, slots=True)
class DisambiguationCandidate:
    """One entry of a disambiguation page: the linked title and the line describing it."""

    title: str
    description: str


def parse_wiki_html(html: str, *, url: str = "", title: str | None = None) -> WikiPage:
    """Parse a full wiki page or an ``action=parse`` fragment into a clean ``WikiPage``.

    Args:
        html: The page HTML.
        url: The page URL, copied into the result.
        title: The page title when known (API answers); otherwise read from the page.
    """
    soup = BeautifulSoup(html, "lxml")
    page_title = title or _page_title(soup)
    content = _content_root(soup)
    disambiguation = _has_disambiguation_marks(html, content)
    infobox = _lift_infoboxes(content)
    _drop_noise(content)
    sections = _split_sections(content)
    lead = sections[0].text if sections and sections[0].level == 1 else ""
    disambiguation = disambiguation or (not infobox and bool(_MAY_REFER.search(lead[:400])))
    return WikiPage(
        title=page_title,
        url=url,
        infobox=tuple(infobox),
        sections=tuple(sections),
        is_disambiguation=disambiguation,
    )


async def parse_wiki_html_async(html: str, *, url: str = "", title: str | None = None) -> WikiPage:
    """:func:`parse_wiki_html` in a worker thread, off the event loop.

    A large page takes CPU-seconds to parse, which would stall every other coroutine of the
    graph (and of the server) if it ran on the loop.
    """
    return await asyncio.to_thread(parse_wiki_html, html, url=url, title=title)


async def disambiguation_candidates_async(html: str) -> list[DisambiguationCandidate]:
    """:func:`disambiguation_candidates` in a worker thread (see :func:`parse_wiki_html_async`)."""
    return await asyncio.to_thread(disambiguation_candidates, html)


def disambiguation_candidates(html: str) -> list[DisambiguationCandidate]:
    """The pages a disambiguation page points to, in page order (first link of each list item)."""
    soup = BeautifulSoup(html, "lxml")
    content = _content_root(soup)
    _drop_noise(content)
    found: list[DisambiguationCandidate] = []
    seen: set[str] = set()
    for item in content.find_all("li"):
        link = item.find("a", href=True)
        if not isinstance(link, Tag):
            continue
        target = str(link.get("title") or link.get_text(strip=True))
        if (
            not target
            or ":" in target.split(" ")[0]
            or "redlink=1" in str(link["href"])
            or target in seen
        ):
            continue
        seen.add(target)
        found.append(DisambiguationCandidate(target, _squash(item.get_text(" "))))
    return found


def _page_title(soup: BeautifulSoup) -> str:
    # find() rather than CSS selectors throughout: soupsieve is several times slower per element.
    for heading in (
        soup.find("h1", class_="page-header__title"),
        soup.find(id="firstHeading"),
        soup.find("h1", id="section_0"),
    ):
        if isinstance(heading, Tag) and heading.get_text(strip=True):
            return _squash(heading.get_text(" "))
    if soup.title is not None:
        return _TITLE_SUFFIX.sub("", soup.title.get_text()).strip()
    return ""


def _content_root(soup: BeautifulSoup) -> Tag:
    text = soup.find(id="mw-content-text")
    inner = text.find(class_="mw-parser-output") if isinstance(text, Tag) else None
    for found in (inner, soup.find(class_="mw-parser-output"), text):
        if isinstance(found, Tag):
            return found
    return soup.body if soup.body is not None else soup


def _has_disambiguation_marks(html: str, content: Tag) -> bool:
    marks = content.find(id=["disambig", "disambigbox"]) or content.find(
        class_=["disambig", "disambiguation", "dmbox-disambig"]
    )
    return marks is not None or bool(_DISAMBIG_CATEGORY.search(html))


def _lift_infoboxes(content: Tag) -> list[InfoboxField]:
    fields: list[InfoboxField] = []
    for box in content.find_all(["aside", "table"], class_=["portable-infobox", "infobox"]):
        if box.name == "aside" and "portable-infobox" not in (box.get("class") or ()):
            continue
        if box.name == "table" and "infobox" not in (box.get("class") or ()):
            continue
        if box.name == "aside":
            fields.extend(_portable_fields(box))
        else:
            fields.extend(_table_fields(box))
        box.decompose()
    return fields


def _portable_fields(box: Tag) -> list[InfoboxField]:
    fields = []
    for row in box.select(".pi-data"):
        value_node = row.select_one(".pi-data-value")
        if value_node is None:
            continue
        label_node = row.select_one(".pi-data-label")
        source = row.get("data-source")
        source_text = str(source) if source else None
        label = _squash(label_node.get_text(" ")) if label_node is not None else ""
        group_node = row.find_parent("section", class_="pi-group")
        header = group_node.select_one(".pi-header") if isinstance(group_node, Tag) else None
        value = _field_value(value_node)
        if value:
            fields.append(
                InfoboxField(
                    label=label or source_text or "",
                    value=value,
                    source=source_text,
                    group=_squash(header.get_text(" ")) if header is not None else None,
                )
            )
    return fields


def _table_fields(box: Tag) -> list[InfoboxField]:
    fields: list[InfoboxField] = []
    group: str | None = None
    seen_header = False
    for row in box.find_all("tr"):
        cells = [c for c in row.find_all(["th", "td"], recursive=False) if isinstance(c, Tag)]
        if len(cells) == 1 and cells[0].name == "th":
            text = _squash(cells[0].get_text(" "))
            # the first header row before any field is the box title, not a group
            group = text if (seen_header or fields) else None
            seen_header = True
        elif len(cells) == 2:
            label, value = _squash(cells[0].get_text(" ")).rstrip(":"), _field_value(cells[1])
            if label and value:
                fields.append(InfoboxField(label=label, value=value, group=group))
    return fields


def _field_value(node: Tag) -> str:
    node = _copy(node)
    for noise in node.select("sup.reference, .mw-editsection, script, style, noscript"):
        noise.decompose()
    for br in node.find_all("br"):
        br.replace_with(_ITEM)
    for item in node.find_all("li"):
        item.append(_ITEM)
    pieces = (_squash(_CITATION.sub("", piece)) for piece in node.get_text("").split(_ITEM))
    return "; ".join(piece for piece in pieces if piece)


def _copy(node: Tag) -> Tag:
    return copy.copy(node)


def _drop_noise(content: Tag) -> None:
    # One walk with a plain matcher: soupsieve costs a walk of the page per selector, and a
    # large page of nested elements made thirty of them the bulk of the parse.
    for node in content.find_all(_is_noise):
        if node.parent is not None:  # not already gone with a dropped ancestor
            node.decompose()


def _is_noise(node: Tag) -> bool:
    classes = node.get("class") or ()
    node_id = node.get("id")
    for context, tag, class_name, id_name in _NOISE_RULES:
        if (
            (tag is None or node.name == tag)
            and (class_name is None or class_name in classes)
            and (id_name is None or node_id == id_name)
            and (context is None or node.find_parent(class_=context) is not None)
        ):
            return True
    return False


def _noise_rule(selector: str) -> tuple[str | None, str | None, str | None, str | None]:
    """``(ancestor class, tag, class, id)`` of one selector of ``NOISE_SELECTORS``."""
    *context, last = selector.split()
    ancestor = context[0].lstrip(".") if context else None
    tag, _, class_name = last.partition(".")
    tag, _, id_name = tag.partition("#")
    return ancestor, tag or None, class_name or None, id_name or None


_NOISE_RULES = tuple(_noise_rule(selector) for selector in NOISE_SELECTORS)


def _split_sections(content: Tag) -> list[WikiSection]:
    chunks = _flatten(content).split(_MARK)
    sections = [WikiSection(heading="", level=1, text=_clean_block(chunks[0]))]
    for marker, body in zip(chunks[1::2], chunks[2::2], strict=False):
        sections.append(
            WikiSection(heading=marker[1:], level=int(marker[0]), text=_clean_block(body))
        )
    if not sections[0].text:
        sections.pop(0)
    return sections


def _flatten(content: Tag) -> str:
    """The body as text: headings as section marks, a line break after each block, cells split.

    One walk over the tree with an explicit stack, so the time is linear in the page whatever
    its nesting (appending a newline to each block made a page of nested ``<div>``s
    quadratic: bs4 walks to the deepest descendant on every append) and no recursion limit
    is ever reached. Below ``MAX_DEPTH`` levels the rest of a subtree is flattened as plain
    text, which bounds the stack too.
    """
    out: list[str] = []
    # Each frame: the children still to visit and what to write once they are done.
    stack: list[tuple[Iterator[PageElement], str]] = [(iter(content.contents), "")]
    while stack:
        children, closing = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            out.append(closing)
            continue
        if isinstance(child, NavigableString):
            if type(child) in _TEXT_TYPES:
                out.append(str(child))
            continue
        if not isinstance(child, Tag):
            continue
        if child.name in SECTION_TAGS:
            headline = child.select_one(".mw-headline") or child
            text = _EDIT_BRACKETS.sub("", _squash(headline.get_text(" ")))
            out.append(f"\n{_MARK}{child.name[1]}{text}{_MARK}\n")
        elif child.name == "br":
            out.append("\n")
        elif len(stack) >= MAX_DEPTH:
            out.append(child.get_text("") + _closing(child.name))
        else:
            stack.append((iter(child.contents), _closing(child.name)))
    return "".join(out)


def _closing(name: str) -> str:
    """What follows an element's text: a cell separator, a line break, or nothing."""
    if name in ("td", "th"):
        return " | "
    return "\n" if name in BLOCK_TAGS else ""


def _clean_block(text: str) -> str:
    lines = []
    for raw in _CITATION.sub("", text).split("\n"):
        line = _squash(raw).strip(" |")
        if line:
            lines.append(_squash(line.replace(" | ", " | ")))
    return "\n".join(lines)


def _squash(text: str) -> str:
    text = text.replace("\xa0", " ")
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s+([,.;:!?)])", r"\1", text).replace("( ", "(")

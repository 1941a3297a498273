"""Turn a plain-text novel (or play) into clean, numbered chapters: the unit ARCANE counts in.

Why in code and not by hand: every later stage (arc streams, probes, RAG masks, the no-future
rule) refers to a global chapter index 1..C, so segmentation must be reproducible and checkable
(``personae arcane chapters``). Cleaning follows the ARCANE spec's data audit: e-book page
artifacts, image tags, byte-order marks, split drop caps ("I t was"), a modern edition's front
matter (introductions, tables of contents) and back matter (endnotes, study questions), which
are editorial text and must not reach the chapter store; chapter numbering that restarts per
book or act becomes one global index, with the original labels kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import regex

from personae.errors import InputError

DEFAULT_PATTERNS = (
    r"(?im)^[ \t]*chapter[ \t\u00a0]+(\d+|[ivxlc]+)\b\.?",
    r"(?m)^[ \t]*(?:SCENE|Scene)[ \t]+(\d+|[IVX]+)\b\.?",
)
"""Tried in order when the user gives no ``--chapter-pattern``: novels, then plays."""
PATTERN_SECONDS = 10.0
"""Time a user's ``--chapter-pattern`` may take over the whole novel. A pattern with nested
repetition (``(a|aa)+$``) can take exponential time; Python's ``re`` cannot be stopped, so the
user's pattern runs on the ``regex`` engine, which can (it overshoots by a few seconds)."""
_PATTERN_FIX = "fix the pattern, e.g. 'Chapter\\s+(\\d+)'"

Heading: TypeAlias = re.Match[str] | regex.Match[str]
"""A chapter heading found: by ``re`` for the built-in patterns, by ``regex`` for a user's."""

PART_PATTERN = re.compile(
    r"(?m)^[ \t]*((?:BOOK|Book|VOLUME|Volume|PART|Part|ACT|Act)[ \t]+"
    r"(?:THE[ \t]+\w+|[IVXLC]+\b|\d+|one|two|three|four|five|six|seven|eight|nine|ten)\b)"
)
"""Headings of the units chapter numbers restart in (books, volumes, acts)."""

BACK_MATTER_MARKERS = (
    "More classics here",
    "ENDNOTES",
    "INSPIRED BY",
    "COMMENTS & QUESTIONS",
    "FOR FURTHER READING",
    "*** END OF THE PROJECT GUTENBERG",
    "*** END OF THIS PROJECT GUTENBERG",
    "End of the Project Gutenberg",
    "End of Project Gutenberg",
)
"""Lines that start a modern edition's editorial back matter (cut with all that follows)."""

BACK_MATTER_HEADINGS = re.compile(
    r"(?mi)^#{1,3}[ \t]*(?:table of contents|contents|notes|endnotes|afterword|bibliography|"
    r"further reading|literaturhinweise|nachwort|anmerkungen)[ \t]*$"
)
"""Markdown headings of editorial apparatus in converted e-books (English and German)."""

FRONT_MATTER_MARKERS = ("*** START OF THE PROJECT GUTENBERG", "*** START OF THIS PROJECT GUTENBERG")

PAGE_ARTIFACTS = (
    re.compile(r"More classics here:?\s*"),
    re.compile(r"[ \t]*E b d\s*\n\s*E - B o o k s D i r e c t o r y \. c o m[ \t]*"),
    re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)"),
    re.compile(r"(?m)^[ \t]*-?[ \t]*page-\d+[ \t]*$"),
)
"""Running page furniture of the shared e-book files: banners, image tags, page anchors."""

MIN_CHAPTER_CHARS = 200
"""A heading followed by less text than this is a table-of-contents entry, not a chapter."""

_COMMON_WORDS = frozenset(
    "a i o am an and as at be by do go he if in is it me my no of on or so to up us we "
    "was were will with who what when how had has have her him his its not now one our "
    "out she the then there they this that too two you all any are but can did for few "
    "man men new old see saw say long large little great good day way".split()
)


@dataclass(frozen=True)
class SegmentedChapter:
    """One chapter: global index, original label, cleaned text, span in the cleaned text."""

    idx: int
    label: str
    text: str
    char_start: int
    char_end: int


@dataclass(frozen=True)
class Segmentation:
    """The chapters found and what was cut around them (for meta.json and the user's check)."""

    chapters: list[SegmentedChapter]
    pattern: str
    front_chars_dropped: int
    back_chars_dropped: int
    toc_entries_dropped: int
    cleaned_chars: int
    notes: list[str] = field(default_factory=list)


def strip_artifacts(raw: str) -> str:
    """Remove byte-order marks, page banners, image tags; normalise non-breaking spaces."""
    text = raw.replace("\ufeff", "").replace("\u00ad", "").replace("\r\n", "\n")
    for pattern in PAGE_ARTIFACTS:
        text = pattern.sub("", text)
    text = text.replace("\u00a0", " ")
    # Page breaks of the source split sentences into paragraphs ("a single man in\n\npossession").
    return re.sub(r"(?<=[a-z,;])[ \t]*\n[ \t]*\n[ \t]*(?=[a-z])", " ", text)


def join_drop_cap(body: str) -> str:
    """Rejoin a split drop cap at the start of a chapter body ("I t was" -> "It was").

    Only the first 160 characters are looked at. After A, I and O (real one-letter words) the
    halves are joined only when the fragment has one or two letters and is not a word itself
    ("I t", "O ne", "A nd"); "A dog", "A wonderful" and "I was" stay apart, and so,
    unavoidably, do "A long" for "Along" and "A lso" for "Also".
    """
    head, tail = body[:160], body[160:]
    match = re.search(r"(?<![A-Za-z])([A-Z]) ([a-z]+)", head)
    if match is None:
        return body
    letter, fragment = match.group(1), match.group(2)
    if letter in "AIO" and (fragment in _COMMON_WORDS or len(fragment) > 2):
        return body
    head = head[: match.start()] + letter + fragment + head[match.end() :]
    head = re.sub(r"([“\"‘']) (?=[A-Z])", r"\1", head, count=1)
    return head + tail


def _cut_markers(text: str, start_marker: str | None, end_marker: str | None) -> tuple[int, int]:
    start = 0
    if start_marker:
        found = text.find(start_marker)
        if found < 0:
            raise InputError(
                f"start marker {start_marker!r} does not occur in the text",
                "pass text copied exactly from the book (case-sensitive)",
            )
        start = found
    else:
        for marker in FRONT_MATTER_MARKERS:
            found = text.find(marker)
            if found >= 0:
                line_end = text.find("\n", found)
                start = max(start, line_end + 1 if line_end >= 0 else found)
    end = len(text)
    if end_marker:
        found = text.find(end_marker, start + 1)
        if found < 0:
            raise InputError(
                f"end marker {end_marker!r} does not occur after the start",
                "pass text copied exactly from the book (case-sensitive)",
            )
        end = found
    return start, end


def _back_matter_start(text: str, body_start: int, end: int) -> int:
    cut = end
    for marker in BACK_MATTER_MARKERS:
        found = text.find(marker, body_start, end)
        if found >= 0:
            cut = min(cut, found)
    heading = BACK_MATTER_HEADINGS.search(text, body_start, cut)
    return heading.start() if heading else cut


def _headings(text: str, pattern: Any, start: int, end: int) -> list[Heading]:
    """Every match of ``pattern`` in ``text[start:end]``; a user's pattern within its time."""
    if not isinstance(pattern, regex.Pattern):
        return list(pattern.finditer(text, start, end))
    try:
        return list(pattern.finditer(text, start, end, timeout=PATTERN_SECONDS))
    except TimeoutError:
        raise InputError(
            f"--chapter-pattern {pattern.pattern!r} took over {PATTERN_SECONDS:g} s on this "
            "text (nested repetition such as (a+)+ can take exponential time)",
            _PATTERN_FIX,
        ) from None


def _real_headings(matches: list[Heading], end: int) -> tuple[list[Heading], int]:
    """Drop table-of-contents entries: headings followed by almost no text."""
    kept: list[Heading] = []
    dropped = 0
    for i, match in enumerate(matches):
        nxt = matches[i + 1].start() if i + 1 < len(matches) else end
        if nxt - match.end() < MIN_CHAPTER_CHARS:
            dropped += 1
        else:
            kept.append(match)
    return kept, dropped


def _title_after(text: str, position: int) -> tuple[str, int]:
    """A title printed on the heading line ("CHAPTER 1  The Period  I t was...") and its end."""
    window = text[position : position + 120]
    line = window.lstrip(" .:-")
    if not line or line.startswith("\n"):
        return "", position
    title = re.split(r" {2,}|\n", line, maxsplit=1)[0].strip()
    if not 0 < len(title) <= 80 or title.endswith((".", ",", ";", "!", "?", "”", '"')):
        return "", position
    return title, position + (len(window) - len(line)) + len(title)


def _number(token: str) -> int:
    if token.isdigit():
        return int(token)
    values = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}
    total, previous = 0, 0
    for char in reversed(token.lower()):
        value = values.get(char, 0)
        total = total - value if value < previous else total + value
        previous = max(previous, value)
    return total


def _part_label(text: str, start: int, position: int) -> str | None:
    label = None
    for match in PART_PATTERN.finditer(text, start, position):
        label = " ".join(match.group(1).split())
    return label


def segment_novel(
    raw: str,
    *,
    chapter_pattern: str | None = None,
    start_marker: str | None = None,
    end_marker: str | None = None,
) -> Segmentation:
    """Clean ``raw`` and split it into chapters with a global 1..C index.

    Raises:
        InputError: the pattern is not a regular expression, a marker is absent, or no
            chapter is found (the message says which pattern was tried).
    """
    text = strip_artifacts(raw)
    start, end = _cut_markers(text, start_marker, end_marker)
    patterns = (chapter_pattern,) if chapter_pattern else DEFAULT_PATTERNS
    for source in patterns:
        assert source is not None
        compiled = _user_pattern(source) if chapter_pattern else re.compile(source)
        headings, toc = _real_headings(_headings(text, compiled, start, end), end)
        if not headings:
            continue
        body_start = headings[0].start()
        back = _back_matter_start(text, body_start, end)
        headings, more_toc = _real_headings([m for m in headings if m.start() < back], back)
        if headings:
            return _build(text, headings, compiled, source, start, end, back, toc + more_toc)
    tried = " or ".join(repr(p) for p in patterns)
    raise InputError(
        f"no chapters found with the pattern {tried}",
        "pass --chapter-pattern with a regular expression matching the chapter headings",
    )


def _user_pattern(source: str) -> Any:
    """The user's pattern on the ``regex`` engine (same syntax), which honours a timeout."""
    try:
        return regex.compile(source, regex.VERSION0)
    except (regex.error, ValueError, OverflowError) as error:
        raise InputError(
            f"--chapter-pattern {source[:200]!r} is not a regular expression ({error})",
            _PATTERN_FIX,
        ) from None


def _build(
    text: str,
    headings: list[Heading],
    compiled: Any,
    source: str,
    start: int,
    end: int,
    back: int,
    toc: int,
) -> Segmentation:
    chapters: list[SegmentedChapter] = []
    previous_number = 0
    part: str | None = None
    notes: list[str] = []
    for i, match in enumerate(headings):
        stop = headings[i + 1].start() if i + 1 < len(headings) else back
        part = _part_label(text, headings[i - 1].end() if i else start, match.start()) or part
        number_token = match.group(1) if compiled.groups else str(i + 1)
        number = _number(number_token)
        if i and number <= previous_number and part is None:
            notes.append(f"chapter numbering restarts at chapter {i + 1} ({match.group(0)!r})")
        previous_number = number
        heading = " ".join(match.group(0).split()).rstrip(".")
        title, body_start = _title_after(text, match.end())
        label = " — ".join(p for p in (part, heading, title) if p)
        body = join_drop_cap(text[body_start:stop].strip())
        body = re.sub(r"\n{3,}", "\n\n", body)
        chapters.append(SegmentedChapter(i + 1, label, body, match.start(), stop))
    return Segmentation(
        chapters=chapters,
        pattern=source,
        front_chars_dropped=headings[0].start(),
        back_chars_dropped=len(text) - back,
        toc_entries_dropped=toc,
        cleaned_chars=sum(len(c.text) for c in chapters),
        notes=notes,
    )

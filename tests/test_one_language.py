"""One language: the docs, messages, labels and docstrings use the current command spellings only.

The deprecated spellings are derived from the alias table (:mod:`personae.commands.aliases`:
old command paths and old flags), so a spelling added there is searched for at once. They may
appear only in that table and in tests; anywhere a user reads (docs/, README, SECURITY,
examples, every product module, the benchmarks' labels) one is a failure naming the file, the
line and the spelling to use instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from personae.commands.aliases import OLD_FLAGS, OLD_PATHS
from personae.commands.tree import PAPER_ORDER, SHORTCUTS

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "personae" / "commands" / "aliases.py"
READ = (
    "docs",
    "examples",
    "personae",
    "agents",
    "graphs",
    "memory",
    "evals",
    "tools",
    "benchmarks",
)
"""Folders a user reads (pages, examples, messages, docstrings); tests/ may use old spellings."""
FILES = ("README.md", "SECURITY.md", ".env.example", "mkdocs.yml")
SUFFIXES = {".py", ".md", ".html", ".txt", ".json", ".yml", ".toml", ".example", ".sh"}
NOUNS = {"persona index", "arc build"}
"""Old paths that are also the domain's nouns ("the persona index", "an arc build"): written
as a command only (after ``personae `` or opening a code span or a quoted string)."""
GROUPS = {*PAPER_ORDER, *(new[0] for new in SHORTCUTS.values())}
CODE = re.compile(r"(personae(?: -v+)? |[`'\"])$")
WORD_CODE = re.compile(r"(personae(?: -v+)? )$|`$")
"""A one-word old path (``act``) is a command after ``personae `` or opening a code span with
its arguments (`` `act --at 3` ``); a lone `` `act` `` names a group's command (ARCANE has one)."""


def _path_rules() -> Iterator[tuple[re.Pattern[str], str, str]]:
    for old, new in OLD_PATHS.items():
        words = " ".join(old)
        yield re.compile(r"(?<![\w./-])" + re.escape(words) + r"(?![\w.-]|/)"), words, " ".join(new)


PATH_RULES = list(_path_rules())
ARGV_RULES = [
    (
        re.compile(
            r"\[\s*"
            + r",\s*".join(f'"{word}"' for word in old)
            + (r",(?!\s*\"[a-z][a-z-]*\"[,\]])" if len(old) == 1 else r"\s*[,\]]")
        ),
        " ".join(old),
        " ".join(new),
    )
    for old, new in OLD_PATHS.items()
]
"""An argv list in code (``["eval", "arcane", book]``, ``["act", str(story), ...]``); a list of
plain words (``--only``'s choices) is not a command line."""
FLAG_RULES = [
    (re.compile(re.escape(old) + r"(?![\w-])"), old, new)
    for flags in OLD_FLAGS.values()
    for old, new in flags.items()
]


def deprecated_spellings(line: str) -> list[tuple[str, str]]:
    """Each (old spelling, new spelling) ``line`` uses."""
    found = []
    for pattern, old, new in PATH_RULES:
        for match in pattern.finditer(line):
            before = line[: match.start()]
            previous = before.split()[-1:]
            if previous and previous[0].strip("`'\"(") in GROUPS:
                continue  # a new spelling going on (``arcane eval arcane-...``) is not this one
            if " " not in old:
                after = line[match.end() :]
                if not (
                    WORD_CODE.search(before) and (before.endswith("personae ") or after[:2] == " -")
                ):
                    continue  # ``act`` in prose, or one of a group's commands: a word
            elif old in NOUNS and not CODE.search(before):
                continue  # "the persona index" in prose: a noun, not a command
            found.append((old, new))
    found += [(old, new) for pattern, old, new in FLAG_RULES if pattern.search(line)]
    return found


def read_files() -> Iterator[Path]:
    for name in FILES:
        if (ROOT / name).is_file():
            yield ROOT / name
    for folder in READ:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and path != TABLE:
                if not {"__pycache__", "site", "node_modules"} & set(path.parts):
                    yield path


def argv_spellings(text: str) -> list[tuple[int, str, str]]:
    """Each (line number, old spelling, new spelling) of an argv list in ``text``."""
    return sorted(
        (text.count("\n", 0, match.start()) + 1, old, new)
        for pattern, old, new in ARGV_RULES
        for match in pattern.finditer(text)
    )


def test_no_page_message_or_docstring_uses_a_deprecated_spelling() -> None:
    misses = []
    for path in read_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        found = [
            (number, old, new)
            for number, line in enumerate(text.splitlines(), 1)
            for old, new in deprecated_spellings(line)
        ]
        for number, old, new in sorted(found + argv_spellings(text)):
            misses.append(f"{path.relative_to(ROOT)}:{number}: '{old}' is now '{new}'")
    assert misses == [], "\n".join(misses)


def test_an_argv_list_with_an_old_spelling_is_found() -> None:
    code = 'argv = [\n    "eval",\n    "arcane",\n    book,\n]\nmain(["act", str(story)])\n'
    assert argv_spellings(code) == [(1, "eval arcane", "arcane eval"), (6, "act", "bookmarks act")]
    assert argv_spellings('ONLY = ["act", "profile", "arc"]\nmain(["arcane", "eval", b])') == []


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("run `personae eval arcane --limit 3`", [("eval arcane", "arcane eval")]),
        ('raise InputError("x", "run eval personality first")',
         [("eval personality", "amadeus eval-personality")]),
        ("``arc build`` resumes", [("arc build", "arcane build-arcs")]),
        ("uv run personae act story.json --at 3", [("act", "bookmarks act")]),
        ("`act --memory DIR` keeps the bank", [("act", "bookmarks act")]),
        ("  --roles released --judge exact", [("--judge", "--judge-method")]),
        ("personae arcane show-arc B --at-chapter 3", [("--at-chapter", "--chapter")]),
        ("the arc build of Ada kept no arc; the persona index holds it", []),
        ("`personae arcane eval`, `bookmarks act`, `arcane act` and --judge-model", []),
        ("personae characterhub eval profile.json --judge-method nli --teacher-model m", []),
        ("how characters act, and what they export", []),
    ],
)  # fmt: skip
def test_the_check_finds_commands_not_words(line: str, found: list[tuple[str, str]]) -> None:
    assert deprecated_spellings(line) == found


def test_every_old_spelling_has_a_rule() -> None:
    assert {old for _, old, _ in PATH_RULES} == {" ".join(old) for old in OLD_PATHS}
    assert len(FLAG_RULES) == sum(len(flags) for flags in OLD_FLAGS.values()) >= 3

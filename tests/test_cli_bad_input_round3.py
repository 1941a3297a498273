"""Issue 27's bad-input table: every command, one line, exit 2, nothing written, no traceback.

Each case builds its inputs in a fresh folder and gives an argv (and the environment it sets).
The run happens in an empty working directory; afterwards no file exists that the case did not
make, except under the case's ``out`` folder. The comment on a case says what it did before
when it was not already one line and exit 2.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cli_errors import assert_one_line_error

from personae.cli import main

BAD_URLS = {
    "unclosed IPv6": "http://[::1",
    "port out of range": "http://h:99999",
    "ftp": "ftp://mirror",
    "no host": "http://",
}


@dataclass(frozen=True)
class Case:
    """One bad input: the argv it runs, the environment it sets, the message it must give."""

    argv: Callable[[Path], list[str]]
    problem: str
    env: dict[str, str] = field(default_factory=dict)


def profile_json(folder: Path) -> Path:
    path = folder / "profile.json"
    profile = {"character": "Kenshiro", "profile": "I am Kenshiro.", "dimensions": {}}
    path.write_text(json.dumps(profile), encoding="utf-8")
    return path


def storyline(folder: Path) -> Path:
    path = folder / "story.jsonl"
    path.write_text(json.dumps({"action": "Kyon sighs.", "character": "Kyon"}) + "\n")
    return path


def batch(folder: Path) -> Path:
    path = folder / "chars.csv"
    path.write_text("name,franchise\nKenshiro,Hokuto\n", encoding="utf-8")
    return path


Argv = Callable[[Path], list[str]]


def with_url(url: str) -> Callable[[Callable[[Path, str], list[str]]], Argv]:
    """``argv(folder, url)`` with ``url`` bound: ``with_url(url)(lambda f, u: [...])``."""

    def bind(argv: Callable[[Path, str], list[str]]) -> Argv:
        return lambda folder: argv(folder, url)

    return bind


def extended(argv: Argv, *extra: str) -> Argv:
    """``argv`` with ``extra`` flags after it."""
    return lambda folder: [*argv(folder), *extra]


def with_memory(argv: Argv) -> Argv:
    """``argv`` with ``--memory`` in the case's output folder."""
    return lambda folder: [*argv(folder), "--memory", str(folder / "out")]


def url_cases() -> dict[str, Case]:
    """Issue 27.3: every URL a user gives goes through one checker (tracebacks before)."""
    cases: dict[str, Case] = {}
    for label, url in BAD_URLS.items():
        shown = re.escape(url)
        cases |= {
            f"persona index {label}": Case(  # ValueError: Invalid IPv6 URL
                with_url(url)(
                    lambda f, u: ["amadeus", "index", u + "/wiki/X", "--memory", str(f / "out")]
                ),
                rf"the persona source '{shown}/wiki/X' is not an http\(s\) URL",
            ),
            f"chat source {label}": Case(
                with_url(url)(lambda f, u: ["chat", u + "/wiki/X", "--memory", str(f / "out")]),
                rf"the persona source '{shown}/wiki/X' is not an http\(s\) URL",
            ),
            f"doctor --wiki {label}": Case(  # ValueError: Invalid IPv6 URL
                with_url(url)(lambda f, u: ["doctor", "--wiki", u]),
                rf"the wiki URL '{shown}' is not",
            ),
            f"eval profile --reference {label}": Case(
                with_url(url)(
                    lambda f, u: ["characterhub", "eval", str(profile_json(f)), "--reference", u]
                ),
                rf"--reference '{shown}' is not an http\(s\) URL",
            ),
            f"profile --batch --server {label}": Case(  # httpx InvalidURL traceback
                with_url(url)(
                    lambda f, u: [
                        *["profile", "--batch", str(batch(f)), "--server", u],
                        *["--out", str(f / "out")],
                    ]
                ),
                rf"--server '{shown}' is not an http\(s\) URL",
            ),
            f"bench --server {label}": Case(
                with_url(url)(
                    lambda f, u: [
                        *["bookmarks", "bench", str(storyline(f)), "--server", u],
                        *["--out", str(f / "out")],
                    ]
                ),
                rf"--server '{shown}' is not an http\(s\) URL",
            ),
            f"eval arcane --server {label}": Case(
                with_url(url)(
                    lambda f, u: [
                        *["arcane", "eval", "book", "--server", u, "--data", str(f)],
                        *["--out", str(f / "out")],
                    ]
                ),
                rf"--server '{shown}' is not an http\(s\) URL",
            ),
            f"profile --exclude-url {label}": Case(  # tried the network 5 times before
                with_url(url)(
                    lambda f, u: [
                        *["profile", "Kenshiro", "--wiki", "https://w.org", "--exclude-url", u],
                        *["--out", str(f / "out")],
                    ]
                ),
                rf"--exclude-url '{shown}' is not an http\(s\) URL",
            ),
            f"mcp --wiki {label}": Case(
                with_url(url)(lambda f, u: ["mcp", "--wiki", u]), rf"the wiki URL '{shown}' is not"
            ),
        }
    return cases


# --- the rest of the table: every command's flags, settings and files (issue 27.11) ---
# Each case's message was read from a run and is asserted here; a case whose command fails
# earlier for another reason (an unknown book) is left out rather than counted twice.


def prof(f: Path) -> str:
    p = f / "profile.json"
    p.write_text(json.dumps({"character": "K", "profile": "I am K.", "dimensions": {}}))
    return str(p)


def story(f: Path) -> str:
    p = f / "story.jsonl"
    p.write_text(
        "".join(
            json.dumps({"action": f"Kyon sighs {n}.", "character": "Kyon"}) + "\n" for n in range(4)
        )
    )
    return str(p)


def csvf(f: Path) -> str:
    p = f / "chars.csv"
    p.write_text("name,franchise\nK,H\n")
    return str(p)


def persona(f: Path) -> str:
    p = f / "k.md"
    p.write_text("# K\n\n## Story\n\nK walks.\n")
    return str(p)


def out(f: Path) -> str:
    return str(f / "out")


def text(f: Path, name: str, content: str) -> str:
    p = f / name
    p.write_text(content)
    return str(p)


MODEL_CMDS: dict[str, Callable[[Path], list[str]]] = {
    "profile": lambda f: ["profile", "K", "--wiki", "https://w.org", "--out", out(f)],
    "act": lambda f: ["bookmarks", "act", story(f), "--character", "Kyon", "--at", "3"],
    "bench": lambda f: ["bookmarks", "bench", story(f), "--out", out(f)],
    "chat": lambda f: ["chat", persona(f), "--memory", out(f), "--ask", "hi"],
    "arcane act": lambda f: [
        "arcane",
        "act",
        "book",
        "scene",
        "--character",
        "A",
        "--chapter",
        "1",
        "--data",
        str(f),
    ],
    "arcane prepare": lambda f: ["arcane", "prepare", "book", "--data", str(f)],
    "arcane prompt": lambda f: [
        "arcane",
        "prompt",
        "book",
        "--probe",
        "p",
        "--phase",
        "0",
        "--data",
        str(f),
    ],
    "probes build": lambda f: ["arcane", "build-probes", "book", "--data", str(f)],
    "export arcane": lambda f: [
        "arcane",
        "export",
        "book",
        "--format",
        "sft",
        "--data",
        str(f),
        "--out",
        out(f),
    ],
    "eval personality": lambda f: [
        "amadeus",
        "eval-personality",
        "--questionnaire",
        "mbti",
        "--character",
        "K",
        "--out",
        out(f),
    ],
    "eval persona-qa": lambda f: ["amadeus", "eval-qa", str(f / "qa.json"), "--out", out(f)],
    "eval arcane-perturb": lambda f: ["arcane", "eval-perturb", out(f)],
    "eval arcane": lambda f: ["arcane", "eval", "book", "--data", str(f), "--out", out(f)],
    "arc build": lambda f: ["arcane", "build-arcs", "book", "--character", "A", "--data", str(f)],
    "eval profile": lambda f: ["characterhub", "eval", prof(f), "--reference", prof(f)],
}


def bulk_cases() -> dict[str, Case]:
    """The table beyond the URLs: flags, settings and files of every command."""
    C: dict[str, tuple[Callable[[Path], list[str]], dict[str, str]]] = {}
    for name, b in MODEL_CMDS.items():
        C[f"{name} --temperature abc"] = (extended(b, "--temperature", "abc"), {})
        C[f"{name} --top-p 7"] = (extended(b, "--top-p", "7"), {})
        C[f"{name} PERSONAE_TEMPERATURE=hot"] = (b, {"PERSONAE_TEMPERATURE": "hot"})
        C[f"{name} PERSONAE_EMBEDDINGS=bogus"] = (b, {"PERSONAE_EMBEDDINGS": "bogus"})
        C[f"{name} --model nomodel"] = (extended(b, "--model", "gpt4"), {})
    for name in ("act", "chat", "arc build", "profile"):
        b = MODEL_CMDS[name]
        if name == "act":
            b = with_memory(b)  # without --memory, act opens no checkpointer
        C[f"{name} PERSONAE_CHECKPOINTER=postgres//u:pw@h/db"] = (
            b,
            {"PERSONAE_CHECKPOINTER": "postgres//u:Hunter2Pw@h/db"},
        )
        C[f"{name} PERSONAE_CHECKPOINTER sslmode"] = (
            b,
            {"PERSONAE_CHECKPOINTER": "postgresql://u:Hunter2Pw@h/db?sslmode=nope"},
        )
    C["act --memory file"] = (
        lambda f: [
            "bookmarks",
            "act",
            story(f),
            "--character",
            "Kyon",
            "--at",
            "1",
            "--memory",
            csvf(f),
        ],
        {},
    )
    C["act --at -1"] = (
        lambda f: ["bookmarks", "act", story(f), "--character", "Kyon", "--at", "-1"],
        {},
    )
    C["act --at 99"] = (
        lambda f: ["bookmarks", "act", story(f), "--character", "Kyon", "--at", "99"],
        {},
    )
    C["act unknown character"] = (
        lambda f: ["bookmarks", "act", story(f), "--character", "Nobody", "--at", "1"],
        {},
    )
    C["act missing storyline"] = (
        lambda f: ["bookmarks", "act", str(f / "none.jsonl"), "--character", "K", "--at", "1"],
        {},
    )
    C["act storyline folder"] = (
        lambda f: ["bookmarks", "act", str(f), "--character", "K", "--at", "1"],
        {},
    )
    C["bench --limit 0"] = (
        lambda f: ["bookmarks", "bench", story(f), "--limit", "0", "--out", out(f)],
        {},
    )
    C["bench --concurrency 0"] = (
        lambda f: ["bookmarks", "bench", story(f), "--concurrency", "0", "--out", out(f)],
        {},
    )
    C["bench --max-failures abc"] = (
        lambda f: ["bookmarks", "bench", story(f), "--max-failures", "abc", "--out", out(f)],
        {},
    )
    C["bench --method nope"] = (
        lambda f: ["bookmarks", "bench", story(f), "--method", "nope", "--out", out(f)],
        {},
    )
    C["profile --max-rounds 0"] = (
        lambda f: ["profile", "K", "--max-rounds", "0", "--out", out(f)],
        {},
    )
    C["profile empty name"] = (lambda f: ["profile", " ", "--out", out(f)], {})
    C["profile --batch missing"] = (
        lambda f: ["profile", "--batch", str(f / "no.csv"), "--out", out(f)],
        {},
    )
    C["profile --batch no name column"] = (
        lambda f: ["profile", "--batch", text(f, "b.csv", "who\nK\n"), "--out", out(f)],
        {},
    )
    C["profile --cache-ttl soon"] = (
        lambda f: ["profile", "K", "--cache-ttl", "soon", "--out", out(f)],
        {},
    )
    C["profile --out is a file"] = (
        lambda f: ["profile", "K", "--wiki", "https://w.org", "--out", csvf(f)],
        {},
    )
    C["profile --concurrency 0"] = (
        lambda f: ["profile", "--batch", csvf(f), "--concurrency", "0", "--out", out(f)],
        {},
    )
    C["data fetch --max-mb 0"] = (
        lambda f: ["bookmarks", "fetch", "--max-mb", "0", "--dest", out(f)],
        {},
    )
    C["data fetch HF_ENDPOINT bad"] = (
        lambda f: ["bookmarks", "fetch", "--dest", out(f)],
        {"HF_ENDPOINT": "http://[::1"},
    )
    C["data fetch --dest file"] = (
        lambda f: [
            "bookmarks",
            "fetch",
            "--dest",
            csvf(f),
            "--endpoint",
            "http://127.0.0.1:9",
        ],
        {},
    )
    C["data positions unknown character"] = (
        lambda f: ["bookmarks", "positions", story(f), "--character", "Nobody"],
        {},
    )
    C["data positions missing file"] = (
        lambda f: ["bookmarks", "positions", str(f / "x.json"), "--character", "K"],
        {},
    )
    C["persona index missing"] = (
        lambda f: ["amadeus", "index", str(f / "none.md"), "--memory", out(f)],
        {},
    )
    C["persona index unknown kind"] = (
        lambda f: ["amadeus", "index", text(f, "x.pdf", "x"), "--memory", out(f)],
        {},
    )
    C["persona index --chunk-size 0"] = (
        lambda f: ["amadeus", "index", persona(f), "--chunk-size", "0", "--memory", out(f)],
        {},
    )
    C["persona index --overlap -1"] = (
        lambda f: ["amadeus", "index", persona(f), "--overlap", "-1", "--memory", out(f)],
        {},
    )
    C["persona index --embedding bogus"] = (
        lambda f: ["amadeus", "index", persona(f), "--embedding", "bogus", "--memory", out(f)],
        {},
    )
    C["persona index ftp source"] = (
        lambda f: ["amadeus", "index", "ftp://x/wiki/K", "--memory", out(f)],
        {},
    )
    C["chat --memory file"] = (
        lambda f: ["chat", persona(f), "--memory", csvf(f), "--ask", "hi"],
        {},
    )
    C["chat no source no memory"] = (
        lambda f: ["chat", "--character", "Nobody", "--memory", out(f), "--ask", "hi"],
        {},
    )
    C["novel import missing"] = (
        lambda f: ["arcane", "import", str(f / "none.txt"), "--data", out(f)],
        {},
    )
    C["novel import empty"] = (
        lambda f: ["arcane", "import", text(f, "e.txt", ""), "--data", out(f)],
        {},
    )
    C["novel import bad pattern"] = (
        lambda f: [
            "arcane",
            "import",
            text(f, "b.txt", "x"),
            "--chapter-pattern",
            "(",
            "--data",
            out(f),
        ],
        {},
    )
    C["novel chapters unknown"] = (lambda f: ["arcane", "chapters", "nobook", "--data", out(f)], {})
    C["arc show unknown"] = (
        lambda f: ["arcane", "show-arc", "nobook", "--character", "A", "--data", str(f)],
        {},
    )
    C["arc annotate unknown"] = (
        lambda f: [
            "arcane",
            "annotate-arcs",
            "nobook",
            "--data",
            str(f),
            "--export",
            str(f / "s.csv"),
        ],
        {},
    )
    C["arcane act chapter 0"] = (
        lambda f: [
            "arcane",
            "act",
            "book",
            "scene",
            "--character",
            "A",
            "--chapter",
            "0",
            "--data",
            str(f),
        ],
        {},
    )
    C["arcane act unknown book"] = (
        lambda f: [
            "arcane",
            "act",
            "nobook",
            "scene",
            "--character",
            "A",
            "--chapter",
            "1",
            "--data",
            str(f),
        ],
        {},
    )
    C["arcane act bad mode"] = (
        lambda f: [
            "arcane",
            "act",
            "book",
            "scene",
            "--character",
            "A",
            "--chapter",
            "1",
            "--mode",
            "zzz",
            "--data",
            str(f),
        ],
        {},
    )
    C["export arcane bad format"] = (
        lambda f: [
            "arcane",
            "export",
            "book",
            "--format",
            "csv",
            "--data",
            str(f),
            "--out",
            out(f),
        ],
        {},
    )
    C["eval arcane bad modes"] = (
        lambda f: ["arcane", "eval", "book", "--modes", "zzz", "--data", str(f), "--out", out(f)],
        {},
    )
    C["eval arcane --limit 0"] = (
        lambda f: ["arcane", "eval", "book", "--limit", "0", "--data", str(f), "--out", out(f)],
        {},
    )
    C["eval arcane-report missing"] = (lambda f: ["arcane", "eval-report", str(f / "none")], {})
    C["eval personality unknown questionnaire"] = (
        lambda f: [
            "amadeus",
            "eval-personality",
            "--questionnaire",
            str(f / "none.json"),
            "--character",
            "K",
        ],
        {},
    )
    C["eval persona-qa missing"] = (
        lambda f: ["amadeus", "eval-qa", str(f / "none.json"), "--out", out(f)],
        {},
    )
    C["eval persona-human no action"] = (lambda f: ["amadeus", "eval-human"], {})
    C["eval persona-human ratings missing"] = (
        lambda f: ["amadeus", "eval-human", "--ratings", str(f / "none.csv")],
        {},
    )
    C["eval persona-chunks no character"] = (
        lambda f: ["amadeus", "eval-chunks", "--out", out(f)],
        {},
    )
    C["eval persona-chunks --k 0"] = (
        lambda f: ["amadeus", "eval-chunks", "--character", "K", "--k", "0", "--out", out(f)],
        {},
    )
    C["eval profile missing"] = (lambda f: ["characterhub", "eval", str(f / "none.json")], {})
    C["eval profile references missing"] = (
        lambda f: ["characterhub", "eval", prof(f), "--references", str(f / "r.csv")],
        {},
    )
    C["eval profile --chunk-tokens 0"] = (
        lambda f: ["characterhub", "eval", prof(f), "--reference", prof(f), "--chunk-tokens", "0"],
        {},
    )
    C["mcp --port 0"] = (lambda f: ["mcp", "--port", "0"], {})
    C["mcp --port 70000"] = (lambda f: ["mcp", "--port", "70000"], {})
    C["mcp missing storyline"] = (lambda f: ["mcp", "--storyline", str(f / "none.jsonl")], {})
    C["doctor --embedding bogus"] = (lambda f: ["doctor", "--embedding", "bogus", "--no-web"], {})
    C["doctor OPENAI_BASE_URL bad"] = (
        lambda f: ["doctor", "--no-web"],
        {"OPENAI_BASE_URL": "http://[::1"},
    )
    C["profile OPENAI_BASE_URL bad"] = (
        lambda f: ["profile", "K", "--wiki", "https://w.org", "--out", out(f)],
        {"OPENAI_BASE_URL": "http://[::1"},
    )
    C["act OPENAI_BASE_URL ftp"] = (
        lambda f: ["bookmarks", "act", story(f), "--character", "Kyon", "--at", "3"],
        {"OPENAI_BASE_URL": "ftp://x"},
    )
    C["profile PERSONAE_FANDOM_TEMPLATE bad"] = (
        lambda f: ["profile", "K", "--franchise", "H", "--out", out(f)],
        {"PERSONAE_FANDOM_TEMPLATE": "http://[::1"},
    )
    C["profile PERSONAE_CACHE_TTL bad"] = (
        lambda f: ["profile", "K", "--wiki", "https://w.org", "--out", out(f)],
        {"PERSONAE_CACHE_TTL": "soon"},
    )
    C["act PERSONAE_LLM_RETRY_SECONDS bad"] = (
        lambda f: ["bookmarks", "act", story(f), "--character", "Kyon", "--at", "3"],
        {"PERSONAE_LLM_RETRY_SECONDS": "-5"},
    )
    C["act PERSONAE_STRUCTURED_OUTPUT bad"] = (
        lambda f: ["bookmarks", "act", story(f), "--character", "Kyon", "--at", "3"],
        {"PERSONAE_STRUCTURED_OUTPUT": "xml"},
    )
    C["act PERSONAE_CONTEXT_WINDOW bad"] = (
        lambda f: ["bookmarks", "act", story(f), "--character", "Kyon", "--at", "3"],
        {"PERSONAE_CONTEXT_WINDOW": "huge"},
    )
    C["bench --server user:pw"] = (
        lambda f: [
            "bookmarks",
            "bench",
            story(f),
            "--server",
            "http://u:Hunter2Pw@[::1",
            "--out",
            out(f),
        ],
        {},
    )
    C["profile --batch --server ftp"] = (
        lambda f: ["profile", "--batch", csvf(f), "--server", "ftp://x", "--out", out(f)],
        {},
    )
    C["profile NAME --server ftp"] = (  # one name runs on a server too (stop 33)
        lambda f: ["profile", "K", "--server", "ftp://x", "--out", out(f)],
        {},
    )
    return {name: Case(C[name][0], PROBLEMS[name], C[name][1]) for name in PROBLEMS}


PROBLEMS: dict[str, str] = {
    "act PERSONAE_CHECKPOINTER=postgres//u:pw@h/db": (
        r"PERSONAE_CHECKPOINTER='postgres//\*\*\*@h/db' is not a checkpointer"
    ),
    "act PERSONAE_CHECKPOINTER sslmode": r"sslmode is not one of disable",
    "profile --temperature abc": "temperature 'abc' is not a number",
    "profile --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "profile PERSONAE_TEMPERATURE=hot": "temperature 'hot' is not a number",
    "profile PERSONAE_EMBEDDINGS=bogus": "unknown embeddings 'bogus'",
    "profile --model nomodel": "model 'gpt4' is not a provider:model string",
    "act --temperature abc": "temperature 'abc' is not a number",
    "act --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "act PERSONAE_TEMPERATURE=hot": "temperature 'hot' is not a number",
    "act PERSONAE_EMBEDDINGS=bogus": "unknown embeddings 'bogus'",
    "act --model nomodel": "model 'gpt4' is not a provider:model string",
    "bench --temperature abc": "temperature 'abc' is not a number",
    "bench --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "bench PERSONAE_TEMPERATURE=hot": "temperature 'hot' is not a number",
    "bench PERSONAE_EMBEDDINGS=bogus": "unknown embeddings 'bogus'",
    "bench --model nomodel": "model 'gpt4' is not a provider:model string",
    "chat --temperature abc": "temperature 'abc' is not a number",
    "chat --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "chat PERSONAE_TEMPERATURE=hot": "temperature 'hot' is not a number",
    "chat PERSONAE_EMBEDDINGS=bogus": "unknown embeddings 'bogus'",
    "chat --model nomodel": "model 'gpt4' is not a provider:model string",
    "arcane act --temperature abc": "temperature 'abc' is not a number",
    "arcane act --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "arcane act PERSONAE_TEMPERATURE=hot": "temperature 'hot' is not a number",
    "arcane act PERSONAE_EMBEDDINGS=bogus": "unknown embeddings 'bogus'",
    "arcane act --model nomodel": "model 'gpt4' is not a provider:model string",
    "arcane prepare --temperature abc": "temperature 'abc' is not a number",
    "arcane prepare --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "arcane prepare PERSONAE_TEMPERATURE=hot": "temperature 'hot' is not a number",
    "arcane prepare PERSONAE_EMBEDDINGS=bogus": "unknown embeddings 'bogus'",
    "arcane prompt --temperature abc": "temperature 'abc' is not a number",
    "arcane prompt --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "arcane prompt PERSONAE_TEMPERATURE=hot": "temperature 'hot' is not a number",
    "arcane prompt PERSONAE_EMBEDDINGS=bogus": "unknown embeddings 'bogus'",
    "probes build --temperature abc": "temperature 'abc' is not a number",
    "probes build --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "export arcane --temperature abc": "temperature 'abc' is not a number",
    "export arcane --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "export arcane PERSONAE_TEMPERATURE=hot": "temperature 'hot' is not a number",
    "export arcane PERSONAE_EMBEDDINGS=bogus": "unknown embeddings 'bogus'",
    "export arcane --model nomodel": "model 'gpt4' is not a provider:model string",
    "eval personality --temperature abc": "temperature 'abc' is not a number",
    "eval personality --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "eval personality PERSONAE_TEMPERATURE=hot": "temperature 'hot' is not a number",
    "eval personality PERSONAE_EMBEDDINGS=bogus": "unknown embeddings 'bogus'",
    "eval personality --model nomodel": "model 'gpt4' is not a provider:model string",
    "eval persona-qa --temperature abc": "temperature 'abc' is not a number",
    "eval persona-qa --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    # the run context is the runner's input: a bad setting is reported before the QA file
    "eval persona-qa PERSONAE_TEMPERATURE=hot": "temperature 'hot' is not a number",
    "eval persona-qa PERSONAE_EMBEDDINGS=bogus": "unknown embeddings 'bogus'",
    "eval persona-qa --model nomodel": "QA file .*/qa\\.json not found",
    "eval arcane-perturb --temperature abc": "temperature 'abc' is not a number",
    "eval arcane-perturb --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "eval arcane-perturb PERSONAE_TEMPERATURE=hot": ".*/out is not a folder",
    "eval arcane-perturb PERSONAE_EMBEDDINGS=bogus": ".*/out is not a folder",
    "eval arcane-perturb --model nomodel": ".*/out is not a folder",
    "eval arcane --temperature abc": "temperature 'abc' is not a number",
    "eval arcane --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "eval arcane PERSONAE_TEMPERATURE=hot": "temperature 'hot' is not a number",
    "eval arcane PERSONAE_EMBEDDINGS=bogus": "unknown embeddings 'bogus'",
    "eval arcane --model nomodel": "model 'gpt4' is not a provider:model string",
    "arc build --temperature abc": "temperature 'abc' is not a number",
    "arc build --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "eval profile --temperature abc": "temperature 'abc' is not a number",
    "eval profile --top-p 7": "top_p 7\\.0 is outside 0\\.0\\-1\\.0",
    "eval profile PERSONAE_TEMPERATURE=hot": "temperature 'hot' is not a number",
    "eval profile PERSONAE_EMBEDDINGS=bogus": "unknown embeddings 'bogus'",
    "eval profile --model nomodel": "model 'gpt4' is not a provider:model string",
    "chat PERSONAE_CHECKPOINTER=postgres//u:pw@h/db": "PERSONAE_CHECKPOINTER='postgres//\\*\\*\\*@h/db' is not a checkpointer",
    "chat PERSONAE_CHECKPOINTER sslmode": "PERSONAE_CHECKPOINTER='postgresql://\\*\\*\\*@h/db\\?sslmode=nope' is not a valid Postgres URL \\(ss",
    "profile PERSONAE_CHECKPOINTER=postgres//u:pw@h/db": "PERSONAE_CHECKPOINTER='postgres//\\*\\*\\*@h/db' is not a checkpointer",
    "profile PERSONAE_CHECKPOINTER sslmode": "PERSONAE_CHECKPOINTER='postgresql://\\*\\*\\*@h/db\\?sslmode=nope' is not a valid Postgres URL \\(ss",
    "act --memory file": "\\-\\-memory .*/chars\\.csv is not a folder",
    "act --at -1": "position \\-1 is out of range for story \\(4 actions\\)",
    "act --at 99": "position 99 is out of range for story \\(4 actions\\)",
    "act unknown character": "unknown character 'Nobody' in story",
    "act missing storyline": "storyline file .*/none\\.jsonl does not exist",
    "act storyline folder": "storyline file .* is a folder, not a file",
    "bench --limit 0": "\\-\\-limit must be at least 1, got 0",
    "bench --concurrency 0": "\\-\\-concurrency must be at least 1",
    "bench --max-failures abc": "\\-\\-max\\-failures 'abc' is not a count or a percentage",
    "bench --method nope": "storyline 'story' has no major\\-character list \\(no all_characters\\.json beside its file nami",
    "profile --max-rounds 0": "\\-\\-max\\-rounds must be at least 1",
    "profile empty name": "the character name is empty",
    "profile --batch missing": "batch file .*/no\\.csv does not exist",
    "profile --batch no name column": ".*/b\\.csv has no 'name' column",
    "profile --cache-ttl soon": "cache_ttl='soon' is not a duration",
    "profile --out is a file": "\\-\\-out .*/chars\\.csv is not a folder",
    "profile --concurrency 0": "\\-\\-concurrency must be at least 1",
    "data fetch --max-mb 0": "\\-\\-max\\-mb must be at least 1",
    "data fetch HF_ENDPOINT bad": "the Hub endpoint 'http://\\[::1' is not an http\\(s\\) URL",
    "data fetch --dest file": "\\-\\-dest .*/chars\\.csv is not a folder",
    "data positions unknown character": "unknown character 'Nobody' in story",
    "data positions missing file": "storyline file .*/x\\.json does not exist",
    "persona index missing": "persona source .*/none\\.md does not exist",
    "persona index unknown kind": "cannot tell what kind of persona source .*/x\\.pdf is",
    "persona index --chunk-size 0": "\\-\\-chunk\\-size 0 / \\-\\-overlap 200 cannot split a text",
    "persona index --overlap -1": "\\-\\-chunk\\-size 1000 / \\-\\-overlap \\-1 cannot split a text",
    "persona index --embedding bogus": "unknown embeddings 'bogus'",
    "persona index ftp source": "the persona source 'ftp://x/wiki/K' is not an http\\(s\\) URL",
    "chat --memory file": "\\-\\-memory .*/chars\\.csv is a file",
    "chat no source no memory": "unknown character 'Nobody' \\(nothing is indexed there yet\\)",
    "novel import missing": "the novel .*/none\\.txt does not exist",
    "novel import empty": "no chapters found with the pattern '\\(\\?im\\)\\^\\[ \\\\\\\\t\\]\\*chapter\\[ \\\\\\\\t\\\\\\\\u00a0\\]\\+\\(\\\\\\\\d\\+\\|\\[ivxlc\\]\\+\\)\\\\\\\\b\\\\\\\\",
    "novel import bad pattern": "\\-\\-chapter\\-pattern '\\(' is not a regular expression \\(missing \\) at position 1\\)",
    "novel chapters unknown": "unknown book 'nobook' in .*/out \\(imported: none\\)",
    "arc show unknown": "unknown book 'nobook' in .* \\(imported: none\\)",
    "arc annotate unknown": "unknown book 'nobook' in .* \\(imported: none\\)",
    "arcane act unknown book": "unknown book 'nobook' in .* \\(imported: none\\)",
    "arcane act bad mode": "unknown mode 'zzz'",
    "export arcane bad format": "unknown \\-\\-format 'csv'",
    "eval arcane bad modes": "unknown mode 'zzz'",
    "eval arcane --limit 0": "\\-\\-concurrency and \\-\\-limit must be at least 1",
    "eval arcane-report missing": ".*/none is not a folder",
    "eval personality unknown questionnaire": "questionnaire .*/none\\.json not found",
    "eval persona-qa missing": "QA file .*/none\\.json not found",
    "eval persona-human no action": "nothing to do",
    "eval persona-human ratings missing": "ratings file .*/none\\.csv does not exist",
    "eval persona-chunks no character": "nothing to analyse",
    "eval persona-chunks --k 0": "nothing to analyse",
    "eval profile missing": "profile file .*/none\\.json does not exist",
    "eval profile references missing": "references file .*/r\\.csv does not exist",
    "eval profile --chunk-tokens 0": "\\-\\-chunk\\-tokens must be at least 1",
    "mcp --port 0": "\\-\\-port 0 is not a port number",
    "mcp --port 70000": "\\-\\-port 70000 is not a port number",
    "mcp missing storyline": "no storyline at .*/none\\.jsonl",
    "doctor --embedding bogus": "1 check\\(s\\) failed \\(settings\\)",
    "doctor OPENAI_BASE_URL bad": "1 check\\(s\\) failed \\(LLM server\\)",
    "profile OPENAI_BASE_URL bad": "OPENAI_BASE_URL 'http://\\[::1' is not an http\\(s\\) URL",
    "act OPENAI_BASE_URL ftp": "OPENAI_BASE_URL 'ftp://x' is not an http\\(s\\) URL",
    "profile PERSONAE_FANDOM_TEMPLATE bad": "PERSONAE_FANDOM_TEMPLATE 'http://\\[::1' is not an http\\(s\\) URL",
    "profile PERSONAE_CACHE_TTL bad": "PERSONAE_CACHE_TTL='soon' is not a duration",
    "act PERSONAE_LLM_RETRY_SECONDS bad": "PERSONAE_LLM_RETRY_SECONDS='\\-5' is not a number of seconds",
    "act PERSONAE_STRUCTURED_OUTPUT bad": "PERSONAE_STRUCTURED_OUTPUT='xml' is not a structured\\-output method",
    "act PERSONAE_CONTEXT_WINDOW bad": "PERSONAE_CONTEXT_WINDOW='huge' is not a context window",
    "bench --server user:pw": "\\-\\-server 'http://\\*\\*\\*@\\[::1' is not an http\\(s\\) URL",
    "profile --batch --server ftp": "\\-\\-server 'ftp://x' is not an http\\(s\\) URL",
    "profile NAME --server ftp": "\\-\\-server 'ftp://x' is not an http\\(s\\) URL",
}


CASES: dict[str, Case] = {**url_cases(), **bulk_cases()}


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case = CASES[name]
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    monkeypatch.setenv("PERSONAE_CACHE_DIR", str(tmp_path / "out" / "cache"))
    for variable, value in case.env.items():
        monkeypatch.setenv(variable, value)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    argv = case.argv(tmp_path)
    before = files_under(tmp_path)
    capsys.readouterr()
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, case.problem)
    written = files_under(tmp_path) - before
    assert {p for p in written if not p.is_relative_to(tmp_path / "out")} == set()


def test_a_references_pipe_is_read(tmp_path: Path) -> None:
    """Issue 27: ``eval profile --references <(printf ...)`` refused the pipe."""
    import os
    import threading

    from personae.commands.characterhub.eval_profile import read_references

    pipe = tmp_path / "refs.csv"
    os.mkfifo(pipe)

    def write() -> None:
        with pipe.open("w", encoding="utf-8") as handle:
            handle.write("character,reference\nToki,https://hokuto.fandom.com/wiki/Toki\n")

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        assert read_references(pipe) == {"toki": "https://hokuto.fandom.com/wiki/Toki"}
    finally:
        if writer.is_alive():  # refused unread: open the reading end so the writer ends
            os.close(os.open(pipe, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(timeout=10)


def test_no_message_quotes_a_name_before_its_possessive() -> None:
    """Issue 27: ``f"{name!r}'s"`` printed ``'Raoh''s profile``."""
    root = Path(__file__).resolve().parents[1]
    found = [
        f"{path.relative_to(root)}:{number}"
        for folder in ("personae", "agents", "tools", "memory", "graphs", "evals")
        for path in sorted((root / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"!r\}'s\b", line)
    ]
    assert found == []


# --- the MCP tools: a bad call is an MCP tool error of one line (issue 27.5, 27.11) ---

ACT = {"novel": "the_river", "character": "Ada", "chapter": 2, "scenario": "At the ferry."}
STORY_ASK = {"character": "Haruhi", "question": "Where?", "position": 3}
MCP_CASES: dict[str, tuple[str, dict[str, object], str]] = {
    "arcane_act chapter 0": (
        "arcane_act",
        {**ACT, "chapter": 0},
        r"^arcane_act: chapter: input should be greater than or equal to 1 \(got 0\)",
    ),
    "arcane_act chapter text": (
        "arcane_act",
        {**ACT, "chapter": "two"},
        r"^arcane_act: chapter: input should be a valid integer",
    ),
    "arcane_act no scenario": (
        "arcane_act",
        {k: v for k, v in ACT.items() if k != "scenario"},
        r"^arcane_act: scenario: field required",
    ),
    "arcane_act empty scenario": (
        "arcane_act",
        {**ACT, "scenario": ""},
        r"^arcane_act: scenario: string should have at least 1 character",
    ),
    "arcane_act huge scenario": (
        "arcane_act",
        {**ACT, "scenario": "x" * 4_001},
        r"the argument 'scenario' is 4,001 characters, over the 4,000",
    ),
    "arcane_act huge novel": (
        "arcane_act",
        {**ACT, "novel": "x" * 10_000},
        r"the argument 'novel' is 10,000 characters, over the 200",
    ),
    "ask_character no question": (
        "ask_character",
        {"character": "Megumin"},
        r"^ask_character: question: field required",
    ),
    "ask_character question list": (
        "ask_character",
        {"character": "Megumin", "question": [["x"] * 3] * 3},
        r"^ask_character: question: input should be a valid string \(got \[\['x'",
    ),
    "ask_character 2M question": (
        "ask_character",
        {"character": "Megumin", "question": "Why? " * 400_000},
        r"the argument 'question' is 2,000,000 characters, over the 4,000",
    ),
    "ask_character blank question": (
        "ask_character",
        {"character": "Megumin", "question": "  "},
        r"the question is empty; ask the character something",
    ),
    "storyline_memory position text": (
        "storyline_memory",
        {**STORY_ASK, "position": "late"},
        r"^storyline_memory: position: input should be a valid integer",
    ),
    "storyline_memory bad type": (
        "storyline_memory",
        {**STORY_ASK, "type": "gossip"},
        r"^storyline_memory: type: input should be 'state', 'behavioral' or 'concept'",
    ),
    "storyline_memory no storyline served": (
        "storyline_memory",
        STORY_ASK,
        r"this server serves no storyline; start personae mcp with --storyline FILE",
    ),
    "profile_character huge name": (
        "profile_character",
        {"name": "K" * 201},
        r"the argument 'name' is 201 characters, over the 200",
    ),
    "profile_character franchise number": (
        "profile_character",
        {"name": "Kenshiro", "franchise": 7},
        r"^profile_character: franchise: input should be a valid string",
    ),
}


@pytest.mark.parametrize("name", list(MCP_CASES))
def test_a_bad_mcp_tool_call_is_one_line(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from mcp.shared.memory import create_connected_server_and_client_session
    from mcp.types import TextContent

    from personae.mcp.options import ServerOptions
    from personae.mcp.server import build_server

    tool, arguments, problem = MCP_CASES[name]
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # configured, never reached
    server = build_server(ServerOptions(profiles_dir=tmp_path / "profiles"))

    async def call() -> tuple[bool, str]:
        async with create_connected_server_and_client_session(server) as session:
            result = await session.call_tool(tool, arguments)
        texts = [block.text for block in result.content if isinstance(block, TextContent)]
        return result.isError, "\n".join(texts)

    failed, message = asyncio.run(call())
    assert failed and "\n" not in message and "Traceback" not in message, message
    assert "errors.pydantic.dev" not in message and re.search(problem, message), message
    assert not (tmp_path / "profiles").exists()

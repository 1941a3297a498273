"""Citations that mean something: how many planted false facts reach profile.json, prose, card.

Run: uv run python benchmarks/bench_planted_facts.py [--lies 5]

Profiles Kenshiro with each method on a loopback wiki and Tavily (the real graph and clients)
with a scripted model that plants ``--lies`` false facts, each citing a real source id, in
every place a model writes: the planned method's round notes, the paper method's R¹/R²
documents, the rewrite's fact list and its prose. The citation checks answer as an honest
lexical entailment model would (a claim is supported when its content words occur in the text it
cites; a sentence when a kept fact shares its content words). Prints, per method and with the
checks on and off, how many lies reach profile.json's facts, the prose, the card, and the DRInfo
text (the paper method's DRInfo is its raw R² document, kept unchecked as the protocol scores
it). Goal with the checks on: none in profile.json facts, prose and card.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from personae.graphs.characterhub.profiler import graph
from personae.graphs.characterhub.state import ProfilerContext
from personae.loopback import LoopbackWebServer
from personae.memory.characterhub.profile_store import write_profile
from personae.testing import ScriptedChatModel, override_models, prompt_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fake_web import FakeMediaWiki, FakeTavily, FakeWeb  # noqa: E402

KENSHIRO = """<p>Kenshiro is the 64th successor of Hokuto Shinken.</p>
<h2>Personality</h2><p>Kenshiro is stoic and quiet but kind to the weak.</p>
<h2>Relationships</h2><p>Raoh is the eldest brother of Kenshiro. Yuria is the love of Kenshiro.</p>
<h2>History</h2><p>Kenshiro was defeated by Shin, who carved seven scars on his chest.</p>"""
TRUE_FACTS = [
    ("identity", "Kenshiro is the 64th successor of Hokuto Shinken."),
    ("personality", "Kenshiro is stoic and quiet but kind to the weak."),
    ("relationship", "Raoh is the eldest brother of Kenshiro."),
]
LIES = [
    "Kenshiro is the King of Mars.",
    "Kenshiro pilots a giant robot named Zeta.",
    "Kenshiro was born on the Moon colony Selene.",
    "Kenshiro secretly works as a banker in Tokyo.",
    "Kenshiro married the pirate queen Boa Hancock.",
    "Kenshiro fears cats more than anything.",
    "Kenshiro invented the steam engine.",
]
_ID = re.compile(r"\[(S\d+)\]")
_STOP = {"kenshiro", "with", "that", "this", "from", "have", "were", "than", "more", "their"}


def words(text: str) -> set[str]:
    found = {w for w in re.findall(r"[a-z0-9]+", text.casefold()) if len(w) >= 4}
    return found - _STOP


def shown_ids(messages: list[BaseMessage]) -> list[str]:
    return list(dict.fromkeys(_ID.findall(prompt_text(messages))))


def passage_of(messages: list[BaseMessage], text: str) -> list[str]:
    """The id of the shown passage that states ``text`` (true facts cite their real source)."""
    blocks = re.split(r"\n(?=\[S\d+\] )", prompt_text(messages))
    for block in blocks:
        found = _ID.match(block.strip())
        if found and text.rstrip(".") in block:
            return [found.group(1)]
    return shown_ids(messages)[:1]


def scripted(lies: list[str]) -> ScriptedChatModel:
    """Every writing role plants the lies with real ids; the checkers answer lexically."""

    def facts(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        first = shown_ids(messages)[:1]  # a real id, which says nothing of the lie
        true = [
            {"dimension": d, "text": t, "source_ids": passage_of(messages, t)}
            for d, t in TRUE_FACTS
        ]
        return true + [{"dimension": "other", "text": lie, "source_ids": first} for lie in lies]

    def notes(messages: list[BaseMessage]) -> dict[str, Any]:
        return {"facts": facts(messages)}

    def draft(messages: list[BaseMessage]) -> dict[str, Any]:
        prose = " ".join(t.replace("Kenshiro is", "I am") for _, t in TRUE_FACTS[:2])
        prose += " " + " ".join(lie.replace("Kenshiro", "I", 1) for lie in lies)
        return {"profile": prose, "facts": facts(messages), "conflicts": []}

    def document(messages: list[BaseMessage]) -> dict[str, Any]:
        lines = [f"{f['text']} [{', '.join(f['source_ids'])}]" for f in facts(messages)]
        return {"document": "# Kenshiro\n" + "\n".join(lines)}

    def claims(messages: list[BaseMessage]) -> dict[str, Any]:
        prompt = prompt_text(messages)
        blocks = re.split(r"## Claim (\d+): ", prompt)[1:]
        checks = {}  # the answer's keys are the claim numbers shown (a per-call schema)
        for number, body in zip(blocks[::2], blocks[1::2], strict=True):
            claim, _, cited = body.partition("\nCited text:\n")
            wanted = words(claim)
            ok = bool(wanted) and len(wanted & words(cited)) >= 0.8 * len(wanted)
            checks[number] = "supported" if ok else "unsupported"
        return checks

    def prose(messages: list[BaseMessage]) -> dict[str, Any]:
        prompt = prompt_text(messages)
        fact_part, _, sentence_part = prompt.partition("## Sentences of the profile\n")
        known = [words(line) for line in fact_part.splitlines() if re.match(r"\d+\. ", line)]
        answer = {}  # keyed by the sentence numbers shown
        for line in sentence_part.splitlines():
            match = re.match(r"(\d+)\. (.*)", line)
            if not match:
                continue
            said = words(match.group(2))
            if len(said) < 2:
                verdict = "no_claim"
            else:
                backed = any(len(said & fact) >= 0.6 * len(said) for fact in known)
                verdict = "supported" if backed else "unsupported"
            answer[match.group(1)] = {"verdict": verdict}
        return answer

    return ScriptedChatModel(
        responders={
            "QueryPlan": lambda _m: {"queries": [{"dimension": "identity", "query": "Kenshiro"}]},
            "EvidenceNotes": notes,
            "CoverageReview": lambda _m: {"dimensions": []},
            "ProfileDraft": draft,
            "ClaimChecks": claims,
            "ProseCheck": prose,
            "SearchQueries": lambda _m: {"queries": ["Kenshiro"]},
            "ResearchDocument": document,
            # The paper method's Table 8 rewrite without our checks: plain text, the same prose.
            "text": lambda m: str(draft(m)["profile"]),
        }
    )


def count(lies: list[str], text: str) -> int:
    body = text.casefold()
    return sum(lie.casefold().replace("kenshiro ", "").rstrip(".") in body for lie in lies)


async def one_run(method: str, checks: bool, lies: list[str], server: LoopbackWebServer) -> str:
    override_models(specs={"openai:planted": scripted(lies)})
    context = ProfilerContext(
        model="openai:planted",
        fast_model="openai:planted",
        tavily_base_url=server.url,
        method=method,  # type: ignore[arg-type]
        max_rounds=2,
        check_citations=checks,
        cache_dir=None,
    )
    result = await graph.ainvoke(
        {"name": "Kenshiro", "franchise": None, "wiki_url": server.url}, context=context
    )
    with tempfile.TemporaryDirectory() as folder:
        paths = write_profile(Path(folder), result)
        document = json.loads(paths.profile_json.read_text(encoding="utf-8"))
        card = paths.card_json.read_text(encoding="utf-8")
    facts = json.dumps(document["dimensions"])
    return (
        f"{method:>7} checks {'on ' if checks else 'off'}: "
        f"profile.json facts {count(lies, facts)}/{len(lies)}, "
        f"prose {count(lies, document['profile'])}/{len(lies)}, "
        f"card {count(lies, card)}/{len(lies)}, "
        f"DRInfo {count(lies, document['drinfo'])}/{len(lies)}; "
        f"notes dropped {document['usage'].get('notes_unsupported', 0)}, "
        f"facts dropped {document['usage'].get('facts_unsupported', 0)}, "
        f"sentences dropped {document['usage'].get('sentences_unsupported', 0)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lies", type=int, default=5, help=f"false facts planted (<= {len(LIES)})")
    args = parser.parse_args()
    lies = LIES[: max(1, min(args.lies, len(LIES)))]
    wiki = FakeMediaWiki({"Kenshiro": KENSHIRO}, sitename="Hokuto Wiki")
    tavily = FakeTavily(lambda _payload: [], api_key="tvly-bench")
    with LoopbackWebServer(FakeWeb(tavily=tavily, wiki=wiki).route) as server:
        print(f"{len(lies)} false facts planted with real source ids in every model output")
        for method in ("planned", "paper"):
            for checks in (True, False):
                print(asyncio.run(one_run(method, checks, lies, server)))


if __name__ == "__main__":
    main()

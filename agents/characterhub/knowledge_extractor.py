"""The knowledge extractor: CharacterHub's Table 9 prompt, knowledge points with quoted evidence.

The paper extracts the knowledge checklist ``K = [k_1..k_N]`` (statement, evidence, type) from
the whole reference page given as JSON (infobox + content), with one prompt (Appendix F,
Table 9) that ignores role-play-irrelevant material and merges equivalent facts. The same prompt
also measures knowledge density: points extracted from a text per 1k tokens of that text, for
the wiki page, the deep-search output (DRInfo) and the profile alike.

The model's points are checked in code: the type must be one of the seven dimensions, and a
point's evidence is looked up as a quote in the input (whitespace, case and typographic quotes
normalised). Each point records whether it was found (``quoted``); dropping the points whose
evidence is not found is ours and opt-in (``verify_evidence``): Table 9's rule 2 invites
evidence combined from two places, which no verbatim lookup finds, and the filter changes |K|,
the paper's denominator.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from pydantic import BaseModel, Field, field_validator

from personae.answer_store import AnswerStore
from personae.llm import LLMUsage, call_structured
from personae.memory.characterhub.dimensions import Dimension

# CharacterHub, Appendix F, Table 9: "Prompt for extracting structured knowledge points from
# reference character descriptions", verbatim (the input placeholder is ``{input_text}``).
EXTRACTOR_PROMPT = """You will receive a piece of character data (in JSON format) crawled from the Fandom website. The data includes the character's basic information (infobox) and textual descriptions (content).

Please parse the input JSON and extract all **knowledge items** related to the character, and focus on *meaningful, distinctive, and role-relevant* information that contributes to understanding or role-playing this character, labeling each item with its type.

Each knowledge item should represent a semantically complete factual statement or a clearly defined attribute. For example: "He is a passionate young man determined to XXX" or "He is humanity's strongest soldier."

Output the results in a unified structured format.

Please IGNORE any information that is irrelevant to character role-playing, including:
- Field echo information that only restates a label or name (e.g. "His name is XXX.").
- Voice actors, performers, production companies, publishers, episode or chapter numbers (e.g. "voiced by ...").
- Language, romanization, or spelling variants (e.g. Kanji, Romaji, kana notation).
- Generic or obvious facts that do not distinguish this character from ordinary people (e.g. "He is human" or "He is male"), unless they have clear narrative or psychological significance (e.g. "He is human but can transform into a giant"—at this point, "human" information has semantic value).
- Statistical or external information (e.g. number of appearances, popularity rankings, fan titles).
- External commentary or meta descriptions about the character (e.g. "first appeared in episode X").
- Any meta-level information not belonging to the character's in-universe context.

Output Format

Please output your result in JSON format as follows:
```
{{
  "entity": "Character Name",
  "knowledge_points": [
    {{
      "type": "identity | appearance | ability | relationship | experience | personality | other",
      "evidence": "Original supporting text or sentence from the input",
      "knowledge": "Extracted knowledge statement"
    }},
    ...
  ]
}}
```

Rules
1. Each knowledge item should be semantically clear, self-contained, and useful for **understanding or role-playing the character**.
2. Merge and deduplicate overlapping or equivalent facts. Keep only one representative version of each unique fact. Do not output two items that share the same meaning even if worded differently. If two statements express similar meaning, combine them into one richer description.
3. **Do NOT invent or infer** beyond the text. If something is only hinted at or ambiguous, exclude it.
4. Ensure the output is valid JSON with complete and logically consistent fields.
5. If certain categories are not present, you may omit them — do not fill with "unknown".
6. You must only use the following categories for type:
 - identity: factual identity, origin, birthplace, nationality, species, titles, nicknames, ranks, aliases, professions, affiliations with organizations, teams, clans, groups, and roles or statuses associated with them.
 - appearance: physical traits, looks, body, clothing, colors, and distinctive visual features.
 - ability: skills, powers, techniques, magic, fighting capability, special talents, or combat style.
 - relationship: family members, friends, rivals, lovers, allies, enemies, or any significant social or character connections.
 - experience: key life events, battles, training, missions, achievements, historical background, or things the character has done.
 - personality: temperament, behavior patterns, motivations, desires, goals, attitudes, emotional tendencies, moral stance, or thinking style.
 - other: anything that does not reasonably fit into the above categories. Do **not** create or use any other category.

Input Data:
```
{input_text}
```"""

IGNORE_LIST = (
    "Field echo information",
    "Voice actors, performers, production companies, publishers, episode or chapter numbers",
    "Language, romanization, or spelling variants",
    "Generic or obvious facts",
    "Statistical or external information",
    "External commentary or meta descriptions",
    "Any meta-level information",
)
"""The Table 9 IGNORE items, in order (tests pin that the prompt carries each one)."""

_TYPE_ALIASES = {
    "abilities": "ability",
    "relationships": "relationship",
    "experiences": "experience",
    "history": "experience",
    "personality traits": "personality",
    "looks": "appearance",
}
"""Near-miss type words a model writes, mapped to the dimension they mean."""
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_DASHES = re.compile(r"[\u2010-\u2015]")


class ExtractedPoint(BaseModel):
    """One knowledge item as Table 9 asks for it."""

    type: Dimension = Field(description="The knowledge type, one of the seven categories.")
    evidence: str = Field(description="Original supporting text or sentence from the input.")
    knowledge: str = Field(description="Extracted knowledge statement.")

    @field_validator("type", mode="before")
    @classmethod
    def _plain_type(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        word = value.strip().casefold()
        return _TYPE_ALIASES.get(word, word)


class ExtractedKnowledge(BaseModel):
    """Table 9's output: the entity and its knowledge points."""

    entity: str = Field(default="", description="Character name.")
    knowledge_points: list[ExtractedPoint] = Field(
        description="Knowledge items, equivalent facts merged into one richer description."
    )


@dataclass(frozen=True)
class KnowledgePoint:
    """A verified knowledge point ``k_i = {s_i, e_i, type_i}``: its evidence occurs in the input."""

    statement: str
    evidence: str
    type: str
    chunk_id: str
    quoted: bool = True
    """Its evidence occurs in the input (what ``verify_evidence`` keeps)."""


def normalize_quote(text: str) -> str:
    """Text compared for quoting: case-folded, one space between words, plain quotes and dashes."""
    plain = _DASHES.sub("-", text.translate(_QUOTES))
    return " ".join(plain.casefold().split())


def quote_occurs(evidence: str, text: str) -> bool:
    """True when ``evidence`` (non-empty) occurs in ``text`` up to :func:`normalize_quote`."""
    return _quoted_in(evidence, normalize_quote(text))


def _quoted_in(evidence: str, normal_text: str) -> bool:
    wanted = normalize_quote(evidence).strip(" .\"'")
    return bool(wanted) and wanted in normal_text


def verify_points(
    extracted: ExtractedKnowledge, *, chunk_id: str, text: str, verify_evidence: bool = True
) -> tuple[list[KnowledgePoint], int]:
    """The points (empty and repeated ones dropped), and how many were dropped.

    With ``verify_evidence`` a point whose evidence does not occur in ``text`` is dropped too;
    without, it is kept with ``quoted=False``.
    """
    kept: list[KnowledgePoint] = []
    seen: set[str] = set()
    normal_text = normalize_quote(text)
    dropped = 0
    for point in extracted.knowledge_points:
        statement = point.knowledge.strip()
        key = normalize_quote(statement)
        quoted = _quoted_in(point.evidence, normal_text)
        if not statement or (verify_evidence and not quoted) or key in seen:
            dropped += 1
            continue
        seen.add(key)
        kept.append(KnowledgePoint(statement, point.evidence.strip(), point.type, chunk_id, quoted))
    return kept, dropped


def merge_chunk_points(
    per_chunk: Iterable[Sequence[KnowledgePoint]],
) -> tuple[list[KnowledgePoint], int]:
    """The points of every chunk in order, a fact stated in two chunks kept once (the first).

    Only used when a page is split for a small-context model (the paper extracts the whole
    page at once, where Table 9's rule 2 merges equivalent facts). Returns the points and how
    many repeats were dropped.
    """
    kept: list[KnowledgePoint] = []
    seen: set[str] = set()
    dropped = 0
    for point in (point for points in per_chunk for point in points):
        key = normalize_quote(point.statement)
        if key in seen:
            dropped += 1
            continue
        seen.add(key)
        kept.append(point)
    return kept, dropped


def character_data(title: str, infobox: Mapping[str, str], content: Mapping[str, str]) -> str:
    """The JSON Table 9 reads: ``{"title", "infobox": {label: value}, "content": {heading: text}}``."""
    data = {"title": title, "infobox": dict(infobox), "content": dict(content)}
    return json.dumps(data, ensure_ascii=False, indent=1)


def extraction_messages(input_text: str) -> list[BaseMessage]:
    """The Table 9 prompt around ``input_text`` (also the cache key's material)."""
    return [HumanMessage(EXTRACTOR_PROMPT.format(input_text=input_text))]


async def extract_knowledge(
    model: BaseChatModel,
    *,
    input_text: str,
    plain_text: str,
    chunk_id: str = "C1",
    cache: AnswerStore | None = None,
    model_name: str = "",
    verify_evidence: bool = True,
) -> tuple[list[KnowledgePoint], int, LLMUsage]:
    """Verified knowledge points of ``input_text`` (JSON), the number dropped, and the usage.

    ``plain_text`` is the same content as plain text: evidence is looked up there, so a quote
    need not reproduce JSON escapes. With ``cache``, an answer ``model_name`` already gave for
    this exact prompt costs no call; the verification reruns on the cached answer.
    """
    prompt = extraction_messages(input_text)
    extracted, usage = await call_structured(
        model, ExtractedKnowledge, prompt, store=cache, model_name=model_name
    )
    kept, dropped = verify_points(
        extracted, chunk_id=chunk_id, text=plain_text, verify_evidence=verify_evidence
    )
    return kept, dropped, usage

"""The alignment judge: CharacterHub's Table 10 prompt, one label per knowledge point.

The judge sees the knowledge list (ids the code assigned, statements) and the text under test,
nothing else: not the reference evidence, not the reference page. It labels every point
supported, partially supported, irrelevant or contradicted with a brief justification. The
answer's schema is built per call: the ids it was given are its required keys (none missing,
repeated or invented; the code knows each id's statement, so the model does not repeat it),
and the label set is closed, so the metrics never see a label they cannot count.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from pydantic import BaseModel, Field, field_validator

from personae.agents.answer_schemas import answers_by_key, keyed_answers
from personae.answer_store import AnswerStore
from personae.llm import LLMUsage, call_structured

# CharacterHub, Appendix F, Table 10: "Prompt for knowledge-profile alignment using an
# LLM-as-a-Judge framework", verbatim (placeholders ``{knowledge_list}``, ``{character_text}``).
JUDGE_PROMPT = """You are an expert evaluator for role-playing character consistency.

Task

You will receive two items:
1. `knowledge_list`: a JSON array of knowledge objects about a character, each describing a factual aspect of the character. Each object has:
 - `"id"`: a unique integer identifier for the knowledge item,
 - `"knowledge"`: a concise factual statement about the character.
2. `text`: a piece of character-related text. This may be:
 - a first-person profile written from the character's perspective,
 - a third-person descriptive text about the character,
 - or structured JSON data crawled from a source such as Fandom.
 Treat all three forms uniformly as sources of factual claims.

Your goal is to determine, for each knowledge item in `knowledge_list`, determine whether the provided text:
- **supported**: The text explicitly expresses or clearly implies this knowledge point.
- **partially supported**: The text supports some but not all aspects of the knowledge point (e.g., mentions part of a list or partial causation).
- **irrelevant**: The text does not mention or relate to this knowledge point.
- **contradicted**: The text states or implies something that conflicts with this knowledge point.

Do NOT use any labels other than the four above.

Important Rules
1. Focus on **semantic meaning**, not wording. Example: if the knowledge says "He is calm and collected" and the text says "I rarely lose my temper," that is **supported**.
2. A **contradicted** label should be used only if the text explicitly or implicitly rejects or reverses something of the fact.
3. Missing details or partial lack of coverage should be labeled **irrelevant**, not contradicted.
4. **Do NOT treat narrative perspective or tense as evidence**. Do NOT interpret first-person narration ("I") or present tense ("I am", "I do") as evidence that the character is alive or active in the current timeline. Only mark a contradiction if the text explicitly denies or reverses the fact.
5. When uncertain, choose the most reasonable interpretation based on the content of the given text.
6. For each evaluation, provide a brief quote or reasoning from the text that justifies your judgment.

Example

knowledge_list:
```
[
  {{"id": 1, "knowledge": "Eren was born in the Shiganshina District."}},
  {{"id": 2, "knowledge": "Eren is calm and patient."}}
]
```

text:
"I grew up behind the walls of Shiganshina, dreaming of the world beyond. I've always been reckless and driven by anger – patience was never my strength. But since that day, I've carried the Titan power within me."

Expected Output:
```
[
  {{
    "id": 1,
    "knowledge": "Eren was born in the Shiganshina District.",
    "evaluation": "supported",
    "evidence": "He says he grew up in Shiganshina."
  }},
  {{
    "id": 2,
    "knowledge": "Eren is calm and patient.",
    "evaluation": "contradicted",
    "evidence": "He describes himself as reckless and impatient."
  }}
]
```

Input

`knowledge_list`: {knowledge_list}

`text`: {character_text}"""

Label = Literal["supported", "partially supported", "irrelevant", "contradicted"]
"""The four labels of Table 10, spelled as the paper spells them (what the model answers)."""

Verdict = Literal["supported", "partially_supported", "irrelevant", "contradicted"]
"""The closed verdict set the metrics count (``partially supported`` as an identifier)."""

_LABEL_ALIASES = {
    "support": "supported",
    "partially_supported": "partially supported",
    "partially-supported": "partially supported",
    "partial": "partially supported",
    "partially": "partially supported",
    "partially support": "partially supported",
    "not mentioned": "irrelevant",
    "contradiction": "contradicted",
    "contradicts": "contradicted",
}


class Judgement(BaseModel):
    """The judge's label for one knowledge item (its id is the key, its statement known)."""

    evaluation: Label = Field(
        description="supported, partially supported, irrelevant or contradicted."
    )
    evidence: str = Field(
        default="", description="A brief quote or reasoning from the text justifying the label."
    )

    @field_validator("evaluation", mode="before")
    @classmethod
    def _plain_label(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        word = " ".join(value.strip().casefold().split())
        return _LABEL_ALIASES.get(word, word)

    @property
    def verdict(self) -> Verdict:
        """The label as the metrics count it."""
        return (
            "partially_supported" if self.evaluation == "partially supported" else self.evaluation
        )


class Alignment(Judgement):
    """The judge's evaluation of one knowledge item, with the item it is about."""

    id: int = Field(description="The id of the knowledge item, as given.")
    knowledge: str = Field(default="", description="The knowledge statement, as given.")


def alignment_list_schema(ids: Sequence[int]) -> type[BaseModel]:
    """Table 10's output for these knowledge ids: one evaluation per id (required keys)."""
    return keyed_answers(
        "AlignmentList",
        "Table 10's expected output: one evaluation per knowledge item id.",
        tuple(str(i) for i in ids),
        Judgement,
        "The evaluation of knowledge item {key}.",
    )


def knowledge_list(statements: Sequence[str], first_id: int = 1) -> str:
    """The ``knowledge_list`` JSON array of Table 10, ids counting from ``first_id``."""
    items = [{"id": first_id + i, "knowledge": s} for i, s in enumerate(statements)]
    return json.dumps(items, ensure_ascii=False, indent=1)


def judge_messages(statements: Sequence[str], text: str, first_id: int = 1) -> list[BaseMessage]:
    """The Table 10 prompt for ``statements`` against ``text`` (also the cache key's material)."""
    return [
        HumanMessage(
            JUDGE_PROMPT.format(
                knowledge_list=knowledge_list(statements, first_id),
                character_text=json.dumps(text.strip(), ensure_ascii=False),
            )
        )
    ]


async def judge_alignment(
    model: BaseChatModel,
    *,
    statements: Sequence[str],
    text: str,
    first_id: int = 1,
    cache: AnswerStore | None = None,
    model_name: str = "",
) -> tuple[list[Alignment], LLMUsage]:
    """One evaluation per statement against ``text``, in statement order.

    With ``cache``, an answer ``model_name`` already gave for this exact prompt costs no call.
    Raises :class:`~personae.llm.InvalidAnswerError` when the answer is still invalid after
    retries (the caller judges the items one by one, then degrades the ones that still fail).
    """
    wanted = [first_id + i for i in range(len(statements))]
    messages = judge_messages(statements, text, first_id)
    answer, usage = await call_structured(
        model, alignment_list_schema(wanted), messages, store=cache, model_name=model_name
    )
    by_id = answers_by_key(answer)
    return [
        Alignment(id=i, knowledge=s, **by_id[str(i)].model_dump())
        for i, s in zip(wanted, statements, strict=True)
    ], usage

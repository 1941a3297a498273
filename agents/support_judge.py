"""The support judge: does the profile support, partly support, ignore or contradict a fact?

One call per knowledge point keeps each decision small and cacheable. The judge reads the
profile and one statement with its reference evidence, and answers a verdict with a reason; the
verdict is a closed set (near-miss spellings like "Partially" are mapped, anything else is
rejected and retried), so the metrics never see a label they cannot count.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, field_validator

from personae.evals.judge_cache import JudgeCache
from personae.llm import LLMUsage

JUDGE_SYSTEM = """You check a character profile of the fictional character {name} against one
knowledge point taken from a reference wiki page. Decide what the profile says about the point:
- supported: the profile states the point (any wording, first person included);
- partially_supported: the profile states part of it, or something vaguer that agrees with it;
- irrelevant: the profile does not mention it (silence is not contradiction);
- contradicted: the profile states something incompatible with it.
Judge only from the profile text; do not use outside knowledge. Give a one-sentence reason that
quotes or names the part of the profile you relied on."""

JUDGE_USER = """## Profile
{profile}

## Knowledge point ({dimension})
{statement}

Reference evidence: "{evidence}"

Is the knowledge point supported by the profile?"""

Verdict = Literal["supported", "partially_supported", "irrelevant", "contradicted"]
"""The closed verdict set the judge answers (and the metrics count)."""

_VERDICT_ALIASES = {
    "support": "supported",
    "partially supported": "partially_supported",
    "partially-supported": "partially_supported",
    "partial": "partially_supported",
    "partially": "partially_supported",
    "not mentioned": "irrelevant",
    "contradiction": "contradicted",
    "contradicts": "contradicted",
}


class SupportJudgment(BaseModel):
    """The judge's decision for one knowledge point."""

    reason: str = Field(description="One sentence naming the part of the profile relied on.")
    verdict: Verdict = Field(
        description="supported, partially_supported, irrelevant (not mentioned) or contradicted."
    )

    @field_validator("verdict", mode="before")
    @classmethod
    def _plain_verdict(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        word = value.strip().casefold()
        return _VERDICT_ALIASES.get(word, word.replace(" ", "_"))


def judge_messages(
    *, name: str, profile: str, statement: str, evidence: str, dimension: str
) -> list[BaseMessage]:
    """The judge prompt for one knowledge point (also the cache key's material)."""
    return [
        SystemMessage(JUDGE_SYSTEM.format(name=name)),
        HumanMessage(
            JUDGE_USER.format(
                profile=profile.strip(),
                dimension=dimension,
                statement=statement,
                evidence=evidence,
            )
        ),
    ]


async def judge_support(
    model: BaseChatModel,
    *,
    name: str,
    profile: str,
    statement: str,
    evidence: str,
    dimension: str,
    cache: JudgeCache | None = None,
    model_name: str = "",
) -> tuple[SupportJudgment, LLMUsage]:
    """The verdict and reason for one knowledge point against ``profile``.

    With ``cache``, a verdict ``model_name`` already gave for this exact prompt costs no call.
    """
    messages = judge_messages(
        name=name, profile=profile, statement=statement, evidence=evidence, dimension=dimension
    )
    ask = cache or JudgeCache(None)
    judgment, usage = await ask.call_structured(model, model_name, SupportJudgment, messages)
    return judgment, usage

"""ARCANE arc construction, Stage i: the event stream (Table 12) and the state stream (Table 13).

Both read one chapter per call with a running context carried from the previous chapter (the
event stream's ``updated_running_summary``, the state stream's ``updated_running_profile``);
the two never see each other's output, so event omission stays separable from state misreading.
The prompts are the paper's, verbatim, JSON templates included; but the chapter, the character
and the event ids are what the code asked for, so the answer schemas do not ask for them (they
are left out of the JSON schema the model is given, and ignored if it sends them): the code
stamps them on the answer (:func:`stamp_events`, :func:`stamp_state`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

# Table 12 (ARCANE App. P.1): Stage i event-stream prompt, verbatim.
EVENT_SYSTEM = (
    "You are a literary analyst specializing in character psychology. You are analyzing {novel} "
    "chapter by chapter to track psychologically impactful events for a specific character."
)
EVENT_USER = """TARGET CHARACTER: {character}

RUNNING CONTEXT (events extracted from previous chapters):
{running_context}

CURRENT CHAPTER ({chapter_num}):
{chapter_text}

Extract events from this chapter that have psychological impact on {character}. Include events where:
- {character}'s emotions, beliefs, or self-perception shift
- {character}'s relationship with another character changes
- {character} makes a significant decision or judgment
- Something happens that will later affect {character}'s development

If {character} does not appear in this chapter or nothing psychologically relevant happens to them, return an empty events array.

IMPORTANT: Be selective. Only include events with genuine psychological weight, not every minor interaction.

Return JSON only, no other text:
{{
  "chapter": {chapter_num},
  "character": "{character}",
  "events": [
    {{
      "event_id": "ch{chapter_num}_evt01",
      "description": "Brief description of what happens",
      "characters_involved": ["list", "of", "characters"],
      "psychological_impact": {{
        "emotional_state": "What {character} feels",
        "belief_change": "How their beliefs/views shift (or 'none')",
        "self_perception_change": "How they see themselves differently (or 'none')",
        "sequence_type": "redemptive (bad->good outcome) / contaminating (good->bad outcome) / neutral",
        "meaning_made": "Does {character} extract a lesson or update their self-narrative from this event? Describe briefly, or 'none'"
      }},
      "relationship_changes": [
        {{
          "target": "OtherCharacterName",
          "direction": "negative/positive/neutral/ambivalent",
          "change_description": "How the relationship changes",
          "dimensions_affected": ["trust", "esteem", "intimacy", "antagonism"]
        }}
      ],
      "intensity": "low/medium/high"
    }}
  ],
  "updated_running_summary": "Updated 2-3 sentence summary of {character}'s psychological trajectory so far, incorporating this chapter's events"
}}"""

# Table 13 (ARCANE App. P.1): Stage i state-stream prompt, verbatim.
STATE_SYSTEM = (
    "You are a literary psychologist analyzing character development in {novel}. You track "
    "psychological states, belief shifts, desires, intentions, and relationship dynamics chapter "
    "by chapter."
)
STATE_USER = """TARGET CHARACTER: {character}

RUNNING PSYCHOLOGICAL PROFILE (accumulated from previous chapters):
{running_profile}

CURRENT CHAPTER ({chapter_num}):
{chapter_text}

Analyze this chapter for {character}'s psychological state and any changes. Describe:

1. PRESENCE: Is {character} present or mentioned in this chapter? If not, return minimal response.
2. EMOTIONAL STATE: What is {character} feeling in this chapter? How does it compare to the previous chapter?
3. BELIEFS & VALUES: Any shifts in what {character} believes about themselves, others, society, morality?
4. DESIRES: What does {character} want to be true about the world or their situation? How have their desires shifted from the previous chapter?
5. INTENTIONS: What is {character} actively trying to bring about? What plans or goals are they pursuing?
6. KEY RELATIONSHIPS: How does {character} view/feel about other characters in this chapter? Any shifts?
7. SELF-AWARENESS: Does {character} show any new self-knowledge or remain unaware of something about themselves?
8. CHANGE MAGNITUDE: Rate overall psychological change in this chapter as: none / subtle / moderate / significant / transformative

Return JSON only:
{{
  "chapter": {chapter_num},
  "character": "{character}",
  "present_in_chapter": true,
  "emotional_state": "Description",
  "belief_shifts": "Description or 'none'",
  "current_desires": "What {character} wants to be true about the world or their situation, or 'none'",
  "current_intentions": "What {character} is actively trying to bring about, or 'none'",
  "relationship_states": [
    {{
      "target": "OtherCharacterName",
      "current_attitude": "Description of current attitude/feeling",
      "direction_of_change": "warming/cooling/stable/conflicted",
      "dimensions": {{
        "trust": "low/medium/high",
        "esteem": "low/medium/high",
        "intimacy": "low/medium/high"
      }}
    }}
  ],
  "self_awareness_notes": "Description or 'none'",
  "change_magnitude": "none/subtle/moderate/significant/transformative",
  "chapter_summary": "1-2 sentence summary of psychological state at end of this chapter",
  "updated_running_profile": "Updated comprehensive psychological profile of {character} as of this chapter, max 300 words. This should capture their current emotional state, active beliefs, desires, intentions, relationship stances, and ongoing internal conflicts."
}}"""

NO_CONTEXT = "(none yet: this is the first chapter)"

Answer = TypeVar("Answer", bound=BaseModel)


class PsychologicalImpact(BaseModel):
    """How an event affects the character."""

    emotional_state: str
    belief_change: str = "none"
    self_perception_change: str = "none"
    sequence_type: Literal["redemptive", "contaminating", "neutral"]
    meaning_made: str = "none"


class RelationshipChange(BaseModel):
    """A relationship shift an event causes."""

    target: str
    direction: Literal["negative", "positive", "neutral", "ambivalent"]
    change_description: str
    dimensions_affected: list[Literal["trust", "esteem", "intimacy", "antagonism"]] = Field(
        default_factory=list
    )


class StreamEvent(BaseModel):
    """One psychologically impactful event (T12)."""

    event_id: SkipJsonSchema[str] = ""
    """``ch<n>_evtNN``, numbered by the code in the order the events come."""
    description: str
    characters_involved: list[str] = Field(default_factory=list)
    psychological_impact: PsychologicalImpact
    relationship_changes: list[RelationshipChange] = Field(default_factory=list)
    intensity: Literal["low", "medium", "high"]


class ChapterEvents(BaseModel):
    """The event stream's answer for one chapter (T12)."""

    chapter: SkipJsonSchema[int] = 0
    """The chapter asked (stamped by the code)."""
    character: SkipJsonSchema[str] = ""
    """The character asked (stamped by the code)."""
    events: list[StreamEvent] = Field(default_factory=list)
    updated_running_summary: str


Level = Literal["low", "medium", "high"]


class RelationshipDimensions(BaseModel):
    """Trust, esteem, intimacy levels."""

    trust: Level
    esteem: Level
    intimacy: Level


class RelationshipState(BaseModel):
    """Where a relationship stands in this chapter (T13)."""

    target: str
    current_attitude: str
    direction_of_change: Literal["warming", "cooling", "stable", "conflicted"]
    dimensions: RelationshipDimensions


class ChapterState(BaseModel):
    """The state stream's answer for one chapter (T13)."""

    chapter: SkipJsonSchema[int] = 0
    """The chapter asked (stamped by the code)."""
    character: SkipJsonSchema[str] = ""
    """The character asked (stamped by the code)."""
    present_in_chapter: bool
    emotional_state: str = ""
    belief_shifts: str = "none"
    current_desires: str = "none"
    current_intentions: str = "none"
    relationship_states: list[RelationshipState] = Field(default_factory=list)
    self_awareness_notes: str = "none"
    change_magnitude: Literal["none", "subtle", "moderate", "significant", "transformative"]
    chapter_summary: str = ""
    updated_running_profile: str


@dataclass(frozen=True)
class Stream(Generic[Answer]):
    """One of Stage i's two streams: its prompt, its answer and the running text it carries.

    The event and state streams differ only in these; one :meth:`messages` renders either.
    """

    name: str
    """How degraded lines name the stream."""
    system: str
    """The system prompt (``{novel}``)."""
    user: str
    """The user prompt (``{character}``, ``{chapter_num}``, ``{chapter_text}``, the running slot)."""
    running_slot: str
    """The user prompt's slot for the running text carried from the previous chapter."""
    answer: type[Answer]
    """The answer schema."""
    running_of: Callable[[Answer], str]
    """The running text an answer hands to the next window or chapter."""

    def messages(
        self, *, novel: str, character: str, chapter: int, text: str, running: str
    ) -> list[BaseMessage]:
        """The call for one chapter (or one window of it) given the running text so far."""
        user = self.user.format_map(
            {
                "character": character,
                self.running_slot: running or NO_CONTEXT,
                "chapter_num": chapter,
                "chapter_text": text,
            }
        )
        return [SystemMessage(content=self.system.format(novel=novel)), HumanMessage(content=user)]


EVENT_STREAM = Stream[ChapterEvents](
    "event stream (T12)",
    EVENT_SYSTEM,
    EVENT_USER,
    "running_context",
    ChapterEvents,
    lambda answer: answer.updated_running_summary,
)
"""T12: events, carrying the running summary."""

STATE_STREAM = Stream[ChapterState](
    "state stream (T13)",
    STATE_SYSTEM,
    STATE_USER,
    "running_profile",
    ChapterState,
    lambda answer: answer.updated_running_profile,
)
"""T13: the psychological state, carrying the running profile."""


def stamp_events(answer: ChapterEvents, chapter: int, character: str) -> ChapterEvents:
    """``answer`` about ``chapter`` and ``character``, its events numbered ``ch<n>_evtNN``."""
    events = [
        e.model_copy(update={"event_id": f"ch{chapter}_evt{n:02d}"})
        for n, e in enumerate(answer.events, start=1)
    ]
    return answer.model_copy(update={"chapter": chapter, "character": character, "events": events})


def stamp_state(answer: ChapterState, chapter: int, character: str) -> ChapterState:
    """``answer`` about ``chapter`` and ``character``."""
    return answer.model_copy(update={"chapter": chapter, "character": character})

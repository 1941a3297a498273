"""The question proposer: K typed questions whose answers would help the character act next.

The paper's "propose" step, with two prompt sets. ``released`` (the paper's method,
``--method bookmarks``) is the released runner's ``init_bookmarks`` prompt, verbatim but for the
output block (JSON of the same shape instead of a Python list); the model sees the scene, and
under the released runner's roles also the character's running profile and the search history
(the bookmarks synced just before, "unknown" answers marking failed trials). The code keeps the
first K and nothing else: what to avoid is the prompt's job, as in the released runner.
``personae`` (ours, ``--method bookmarks-personae``): the code keeps at most K, only the three
known types, no duplicates, no re-asks of questions already answered "unknown" for this
character, and concept questions only when their keyword is an entity that really occurs in the
scene or among the characters seen so far (a model cannot send the concept scan after a name
it invented).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.agents.answer_schemas import non_blank
from personae.agents.bookmarks.actor import render_scene, story_label
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.bookmarks.lexical import tokens
from personae.memory.bookmarks.storyline import ActingFormat, StoryAction

NEAR_DUPLICATE = 0.8
"""Word-set Jaccard similarity from which two questions count as the same question."""

FILLER_WORDS = frozenset(
    "a an the s t now currently right just also still usually often tend tends typically "
    "generally".split()
)
"""Words that do not change what a question asks (question words like who/where do)."""

# Released BOOKMARKS runner, src/bookmarks/bookmarks.py, init_bookmarks (commit 2489d17): the
# proposal prompt, verbatim; only its last block asks for JSON ({"queries": [...]}) where the
# released one asks for a ```python queries = [...]``` block, since the answer's schema is
# enforced here. {profile} and {history} are shown under the released runner's roles only.
RELEASED_PROPOSER = """# Scene
{scene}

{profile_block}Now, it's {character}'s turn to make the next {predict_target}.
To precisely ground {character}'s {predict_target},
we need more information about the state of the current story.
The system supports three kinds of search queries:

1. concept search:
   - Used to look up the meaning or details of a concrete concept
     mentioned earlier in the story.
   - Must query a named concept or entity. (e.g., What is "..." ...?)
   - Example: What is "Star Beat" as mentioned in this conversation?

2. state search:
   - Used to iteratively update and recover the *current* state of the world
     up to this point in the story.
   - Never use chronical words like **before/after the scene** or **recent** in the query 
     because the search is done recursively, always ask about **now**.
   - Example: Where are the band members right now?

3. behavioral search:
   - Used to recall or infer how a {character} tends to behave
     in a particular situation or under certain conditions, based on the story so far.
   - Behavioral queries should be phrased in a **general** way so that many past
     scenes can potentially match the condition, rather than referring to one
     extremely specific single moment. (simply speaking, make it fewer than 15 words.)
   - Example: How does Arisa usually react when someone makes an impulsive decision?

{history_block}Your task:
Propose {k} most crucial search queries as questions to check
before deciding {character}'s next {predict_target}.
You may freely use any of the three query types above, as long as
the query is useful for grounding {character}'s next {predict_target}.
**However, you should make sure each query is meaningful, targeting at
information not given in the scene.**

Important (for each query):
- Keep the question simple and concise{history_rule}
- Don't focus only on the content, after the content to express
  is clear, search for how the character generally express it,
  especially given that the personality of the character will
  affect the content they will explicitly express.
- For the question, make sure there is no coreference involved:
  the question must explicitly mention all subjects and objects
  instead of using pronouns like "she", "they", "there", or "that".
- The question should be about the story world, characters, and events,
  not about the model or the querying system itself.
- When query tagged as "behavioral", keep the condition general enough that
  it could match multiple past scenes, not a single unique instance.
- For the query, you MUST assign a tag field with one of:
  "concept", "state", or "behavioral",
  indicating which search type this query is intended for.
  only tag as "concept" when searching a named concept or entity.
- Keep each query concise and high potential for information gathering.

Output in the following form:

{{"queries": [
    {{"query": "...", "tag": "..."}},
    {{"query": "...", "tag": "..."}},
    ...
]}}"""
RELEASED_PROFILE_BLOCK = "# Profile of {character}\n{profile}\n\n"
"""The released prompt's profile block ("[empty]" before the first profile update)."""
RELEASED_HISTORY_RULE = """, "unknown" in the history
  means a failed trial, don't try that direction again and
  **avoid even relevant queries** unless no other important information
  to gather, the storyline might just does not mention it."""
"""The released rule about the search history, shown with the history only: a proposer that
sees none (the paper's roles) is not told about "unknown" entries it never sees."""
RELEASED_HISTORY_BLOCK = "Search history:\n{history}\n\n"
"""The released prompt's search history block (the report of the bookmarks synced just before)."""
PREDICT_TARGETS = {"action": "action", "utterance": "utterance"}
"""The released ``predict_target``: "utterance" for Bandori artifacts, else "action"."""

# Ours (--method bookmarks-personae): no paper rubric; written for the code's checks below.
PROPOSER_SYSTEM = """You help {character}, a character in {story}, decide what to do next.
Propose up to {k} questions whose answers, looked up in the story so far, would most help
predict {character}'s very next {target} in the current scene. Each question has a type:
- "behavioral": a GENERAL pattern of {character} that stays useful in many scenes, e.g.
  "How does {character} usually react when someone refuses a request?" (no scene details).
- "state": the situation at this exact point of the story, e.g. "Where is {character} now and
  who is with them?".
- "concept": about one named entity (person, place, group, object) that appears in the scene or
  the character list; give that exact name as the keyword.
Ask about the story world, its characters and events, not about information the scene already
gives. Once the content to express is clear, also ask how {character} generally expresses it.
Name every subject explicitly (no "she", "they", "there", "that"). Ask different things; do not
answer them."""

PROPOSER_USER = """## Characters seen so far
{characters}

## Questions already found unanswerable (do not ask these again)
{do_not_ask}

## The scene so far (most recent last)
{scene}

Propose up to {k} typed questions for {character}'s next action."""

TARGETS = {"action": "action", "utterance": "utterance (what they say next)"}
"""What the proposer is told is predicted, per acting format (the released prompt's wording)."""


QuestionType = Literal["behavioral", "state", "concept"]
"""The paper's three bookmark types (the values of ``BookmarkType``), as the schema states them."""


class ProposedQuestion(BaseModel):
    """One question to look up in the story so far."""

    type: QuestionType = Field(description='"behavioral", "state" or "concept".')
    question: str = Field(description="One short question in English.")
    keyword: str | None = Field(
        default=None,
        description="Concept questions only: the entity's exact name as written in the scene "
        "or character list. Leave empty for other types.",
    )


class ProposedQuestions(BaseModel):
    """The questions proposed for this scene."""

    questions: list[ProposedQuestion] = Field(description="Up to K distinct typed questions.")


class ReleasedQuery(BaseModel):
    """One search query, as the released prompt asks for it."""

    query: str = non_blank("The query.")
    tag: QuestionType = Field(description='"concept", "state" or "behavioral".')


class ReleasedQueries(BaseModel):
    """The released proposer's answer."""

    queries: list[ReleasedQuery] = Field(description="The most crucial search queries.")


def released_proposer_prompt(
    *,
    character: str,
    scene: Sequence[StoryAction],
    k: int,
    acting_format: ActingFormat,
    profile: str | None = None,
    history: str | None = None,
) -> str:
    """The released ``init_bookmarks`` prompt; ``profile`` / ``history`` ``None``: not shown."""
    return RELEASED_PROPOSER.format(
        scene=render_scene(scene, plain=True),
        profile_block=RELEASED_PROFILE_BLOCK.format(
            character=character, profile=profile or "[empty]"
        )
        if profile is not None
        else "",
        history_block=RELEASED_HISTORY_BLOCK.format(history=history or "")
        if history is not None
        else "",
        history_rule=RELEASED_HISTORY_RULE if history is not None else ".",
        character=character,
        predict_target=PREDICT_TARGETS[acting_format],
        k=k,
    )


async def propose_released_questions(
    model: BaseChatModel,
    *,
    character: str,
    scene: Sequence[StoryAction],
    k: int = 5,
    acting_format: ActingFormat = "action",
    profile: str | None = None,
    history: str | None = None,
) -> tuple[list[ProposedQuestion], LLMUsage, int]:
    """The paper's proposal: the released prompt, its first ``k`` queries kept (``[:k]``).

    Returns the questions, the usage and how many the code dropped (beyond ``k``). An answer
    still invalid after retries degrades to no question (``usage.degraded``).
    """
    if k <= 0:
        return [], LLMUsage(), 0
    prompt = released_proposer_prompt(
        character=character,
        scene=scene,
        k=k,
        acting_format=acting_format,
        profile=profile,
        history=history,
    )
    try:
        answer, usage = await call_structured(model, ReleasedQueries, [HumanMessage(prompt)])
    except InvalidAnswerError as failed:
        return [], failed.usage + LLMUsage(degraded=1), 0
    kept = [
        ProposedQuestion(type=q.tag, question=" ".join(q.query.split())) for q in answer.queries[:k]
    ]
    return kept, usage, len(answer.queries) - len(kept)


def question_key(question: str) -> frozenset[str]:
    """A question's identity for duplicate checks: its words minus fillers, case folded.

    Question words stay: "Where is Kyon?" and "Who is Kyon?" are different questions.
    """
    return frozenset(tokens(question)) - FILLER_WORDS


def is_near_duplicate(question: str, others: Iterable[str]) -> bool:
    """Whether ``question`` asks the same as one of ``others`` (same or 80 %-shared words)."""
    mine = question_key(question)
    for other in others:
        theirs = question_key(other)
        if mine == theirs:
            return True
        union = mine | theirs
        if union and len(mine & theirs) / len(union) >= NEAR_DUPLICATE:
            return True
    return False


def _occurs(keyword: str, texts: Sequence[tuple[str, ...]]) -> bool:
    phrase = tuple(tokens(keyword))
    size = len(phrase)
    if not size:
        return False
    return any(
        words[i : i + size] == phrase for words in texts for i in range(len(words) - size + 1)
    )


def keep_valid_questions(
    proposed: ProposedQuestions,
    *,
    k: int,
    scene: Sequence[StoryAction],
    characters: Sequence[str],
    do_not_ask: Sequence[str] = (),
) -> list[ProposedQuestion]:
    """Enforce the rules in code: known types, concept keywords that occur, no re-asks, <= k."""
    known = [tuple(tokens(a.text)) for a in scene] + [tuple(tokens(c)) for c in characters]
    kept: list[ProposedQuestion] = []
    for item in proposed.questions:
        text = " ".join(item.question.split())
        kind = item.type
        if not text:
            continue
        keyword = " ".join((item.keyword or "").split()) or None
        if kind == "concept" and (keyword is None or not _occurs(keyword, known)):
            continue
        if is_near_duplicate(text, [*do_not_ask, *(q.question for q in kept)]):
            continue
        if kind != "concept":
            keyword = None
        kept.append(ProposedQuestion(type=kind, question=text, keyword=keyword))
        if len(kept) >= k:
            break
    return kept


async def propose_questions(
    model: BaseChatModel,
    *,
    character: str,
    story: str | None,
    scene: Sequence[StoryAction],
    characters: Sequence[str],
    k: int = 5,
    do_not_ask: Sequence[str] = (),
    acting_format: ActingFormat = "action",
) -> tuple[list[ProposedQuestion], LLMUsage, int]:
    """Ask ``model`` for up to ``k`` typed questions; the code filters them (see module doc).

    ``scene`` and ``characters`` must come from before the target position only: they are all
    the model sees. Returns the kept questions, the call's usage and how many proposed
    questions the code dropped (a concept keyword not in the scene, a re-ask, more than ``k``),
    so callers can report dropped model output instead of hiding it. An answer still invalid
    after retries degrades to no question (counted in ``usage.degraded``).
    """
    if k <= 0:
        return [], LLMUsage(), 0
    messages = [
        SystemMessage(
            PROPOSER_SYSTEM.format(
                character=character,
                story=story_label(story),
                k=k,
                target=TARGETS[acting_format],
            )
        ),
        HumanMessage(
            PROPOSER_USER.format(
                characters=", ".join(characters) or "(none yet)",
                do_not_ask="\n".join(f"- {q}" for q in do_not_ask) or "(none)",
                scene=render_scene(scene),
                k=k,
                character=character,
            )
        ),
    ]
    try:
        proposed, usage = await call_structured(model, ProposedQuestions, messages)
    except InvalidAnswerError as failed:
        return [], failed.usage + LLMUsage(degraded=1), 0
    kept = keep_valid_questions(
        proposed, k=k, scene=scene, characters=characters, do_not_ask=do_not_ask
    )
    return kept, usage, len(proposed.questions) - len(kept)

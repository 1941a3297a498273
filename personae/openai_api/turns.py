"""One character's turn for a request: the runners the CLI calls, read as pieces of an answer.

A persona answers through :func:`personae.open_chat` with no thread (the app sent the
conversation; nothing is kept), streamed with :meth:`personae.Chat.stream`. An ARCANE
character answers through :func:`personae.act_at_chapter`, in one piece (its role-play is one
call). Either way the turn ends with a :class:`TurnDone` carrying the answer and its tokens.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from personae.openai_api.conversation import Conversation
from personae.openai_api.models import ChapterModel, CharacterModel

if TYPE_CHECKING:
    from personae.graphs.amadeus.graph import AmadeusContext
    from personae.graphs.arcane.roleplay import RoleplayContext
    from personae.runners.amadeus import ChatTurn

NO_SCENE = "{character} is talking with someone."
"""ARCANE's scenario when the app sends no instructions and no earlier turns."""


@dataclass(frozen=True)
class TurnDone:
    """The end of a turn: the whole answer and the tokens it took.

    The tokens are every model call of the turn (for a persona: Guided Selection's checks,
    the Attribute Extractor and the answer), as the model server reported them; that is what
    the turn cost, which is what ``usage`` is for.
    """

    text: str
    """The character's answer."""
    prompt_tokens: int
    """Prompt tokens of every model call of the turn."""
    completion_tokens: int
    """Answer tokens of every model call of the turn."""


TurnPiece = str | TurnDone
"""A piece of the answer's text as it is written, or the turn's end."""


@dataclass(frozen=True)
class TurnContexts:
    """The run settings of each kind of character, built once when the server starts."""

    amadeus: AmadeusContext
    roleplay: RoleplayContext


async def character_turn(
    target: CharacterModel,
    conversation: Conversation,
    contexts: TurnContexts,
    *,
    stream: bool,
) -> AsyncGenerator[TurnPiece, None]:
    """The answer of ``target`` to the conversation's last message, piece by piece."""
    if isinstance(target, ChapterModel):
        done = await _chapter_turn(target, conversation, contexts.roleplay)
        if stream:
            yield done.text  # the role-play is one call: the answer comes in one piece
        yield done
        return
    from personae.runners.amadeus import ChatTurn, open_chat

    async with open_chat(target.character, context=contexts.amadeus) as chat:
        if not stream:
            yield _done(await chat.ask(conversation.message, history=conversation.history))
            return
        async for piece in chat.stream(conversation.message, history=conversation.history):
            yield _done(piece) if isinstance(piece, ChatTurn) else piece


def _done(turn: ChatTurn) -> TurnDone:
    usage: dict[str, Any] = dict(turn.details.get("usage") or {})
    return TurnDone(
        turn.response, int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    )


def scenario_of(target: ChapterModel, conversation: Conversation) -> str:
    """ARCANE's scene: the app's instructions, then the conversation so far."""
    parts = [conversation.instructions.strip()]
    transcript = conversation.transcript(target.character)
    if transcript:
        parts.append(f"The conversation so far:\n{transcript}")
    return "\n\n".join(p for p in parts if p) or NO_SCENE.format(character=target.character)


async def _chapter_turn(
    target: ChapterModel, conversation: Conversation, context: RoleplayContext
) -> TurnDone:
    from langchain_core.callbacks import get_usage_metadata_callback

    from personae.runners.arcane import act_at_chapter

    with get_usage_metadata_callback() as counted:
        answer = await act_at_chapter(
            target.novel,
            target.character,
            target.chapter,
            scenario_of(target, conversation),
            question=conversation.message,
            context=context,
        )
    used = counted.usage_metadata.values()
    return TurnDone(
        answer.response,
        sum(int(u.get("input_tokens", 0)) for u in used),
        sum(int(u.get("output_tokens", 0)) for u in used),
    )

"""A chat app's ``messages`` turned into a character's turn: earlier turns, instructions, message.

Chat apps send the whole conversation with every request (the server keeps no thread):

- the last message is the user's, the one the character answers (else a 400);
- earlier ``user`` and ``assistant`` messages are the conversation so far, in order, as a
  kept thread's turns would be;
- ``system`` and ``developer`` messages are the app's instructions. A persona is played from
  its own persona document, so AMADEUS leaves them out (a chat app's character card or
  "you are a helpful assistant" would fight the persona); ARCANE's role-play takes a scene,
  so there they are the scenario;
- ``tool`` and ``function`` messages are not the character's conversation: left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from personae.openai_api.errors import APIError
from personae.openai_api.schema import ChatMessage, text_of

INSTRUCTION_ROLES = ("system", "developer")


@dataclass(frozen=True)
class Conversation:
    """What a request asks of the character."""

    message: str
    """The user's last message: the one to answer."""
    history: tuple[BaseMessage, ...]
    """The user's and the character's earlier messages, oldest first."""
    instructions: str
    """The app's system and developer messages, joined (empty when none)."""

    def transcript(self, character: str) -> str:
        """The earlier turns as lines of a scene (``User: ...``, ``<character>: ...``)."""
        lines = []
        for turn in self.history:
            speaker = character if isinstance(turn, AIMessage) else "User"
            lines.append(f"{speaker}: {turn.content}")
        return "\n".join(lines)


def read_conversation(messages: list[ChatMessage]) -> Conversation:
    """The turn ``messages`` ask for; a 400 when there is no user message to answer."""
    last = messages[-1]
    if last.role != "user":
        raise APIError(
            400,
            f"the last message is the {last.role}'s: end messages with the user's message "
            "for the character to answer",
            param="messages",
        )
    message = text_of(last).strip()
    if not message:
        raise APIError(400, "the last user message is empty: send some text", param="messages")
    history: list[BaseMessage] = []
    instructions: list[str] = []
    for earlier in messages[:-1]:
        text = text_of(earlier)
        if earlier.role in INSTRUCTION_ROLES:
            instructions.append(text)
        elif earlier.role == "user" and text.strip():
            history.append(HumanMessage(text))
        elif earlier.role == "assistant" and text.strip():
            history.append(AIMessage(text))
    return Conversation(message, tuple(history), "\n\n".join(t for t in instructions if t))

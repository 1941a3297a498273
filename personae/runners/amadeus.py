"""AMADEUS as library calls: index a persona, then talk to the character (one turn or a chat).

The CLI (``personae amadeus index``, ``personae chat``), the MCP ``ask_character`` tool and
apps call these; nothing here prints. The run context (:class:`AmadeusContext`) carries the
models, the persona memory folder, the method and the embedding; what it leaves empty it takes
from the settings (``PERSONAE_MODEL``, ``PERSONAE_EMBEDDINGS``, ``CHROMA_HOST``, ...).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from personae.errors import InputError
from personae.progress import Progress, quiet
from personae.resources import AsyncResources
from personae.run_lock import run_lock

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import RunnableConfig

    from personae.graphs.amadeus.graph import AmadeusContext
    from personae.graphs.store_context import EmbeddingAccess
    from personae.memory.amadeus.persona_store import IndexStats, PersonaIndex
    from personae.tools.amadeus.indexing import IndexSettings

CHAT_DB = "chats.sqlite"
"""The file in the persona memory folder that keeps the conversations (one thread each)."""
DEFAULT_MEMORY = Path("personas")
"""Where persona indexes live unless the caller says otherwise."""


@dataclass(frozen=True)
class IndexedPersona:
    """What :func:`index_persona` did to a character's index."""

    character: str
    """The character's name as the source gives it (the name to talk to)."""
    source: str
    """Where the persona came from (a path, a URL, ``book.json#character``)."""
    source_kind: str
    """markdown, profile, wiki, coser."""
    stats: IndexStats
    """Chunks and sections; how many chunks were added, deleted, kept unchanged."""
    warning: str | None
    """Set when chunks are longer than small embedders read (the fix is ``max_chunk_chars``)."""

    def as_json(self) -> dict[str, Any]:
        """The record ``personae amadeus index --json`` prints."""
        head = {"character": self.character, "source": self.source, "kind": self.source_kind}
        return {**head, **asdict(self.stats)}


@dataclass(frozen=True)
class ChatTurn:
    """One answer of the character, with what grounded it."""

    character: str
    method: str
    """amadeus, naive or none (the run context's)."""
    response: str
    """The character's in-character answer."""
    details: dict[str, Any] = field(default_factory=dict)
    """The graph's output: knowledge chunks, the Guided Selection slot and verdicts, the
    attributes, ``gs_failed`` (the fallback fired) and ``usage`` (calls, ``degraded``)."""
    question: str = ""
    """The user's message this turn answered."""

    def as_json(self) -> dict[str, Any]:
        """The record ``personae chat --json`` prints for the turn."""
        keys = ("response", "knowledge", "selected", "gs_failed", "verdicts", "attributes", "usage")
        body = {key: self.details.get(key) for key in keys}
        return {"character": self.character, "method": self.method, **body}

    @property
    def degraded(self) -> int:
        """Model answers this turn dropped as malformed (0 when every one was usable)."""
        return int((self.details.get("usage") or {}).get("degraded", 0))


def persona_index_settings(
    memory_dir: str | Path | None = DEFAULT_MEMORY,
    *,
    splitter: Literal["acts", "ats", "fixed"] = "acts",
    context: EmbeddingAccess | None = None,
    chunk_size: int = 1000,
    overlap: int = 200,
    max_chunk_chars: int | None = None,
) -> IndexSettings:
    """Where and how a persona is indexed: ``context``'s embedding and Chroma server.

    The embedding is opened here, so a missing server or model package fails before any work.

    Raises:
        InputError: ``memory_dir`` is a file.
    """
    from personae.graphs.store_context import EmbeddingContext
    from personae.tools.amadeus.indexing import IndexSettings

    store = context or EmbeddingContext()
    if chunk_size < 1 or not 0 <= overlap < chunk_size:
        raise InputError(
            f"--chunk-size {chunk_size} / --overlap {overlap} cannot split a text",
            "pass a --chunk-size of 1 or more and an --overlap from 0 to below it",
        )
    if memory_dir is not None and Path(memory_dir).exists() and not Path(memory_dir).is_dir():
        raise InputError(f"--memory {memory_dir} is a file", "pass a folder for the persona index")
    return IndexSettings(
        memory_dir=str(memory_dir) if memory_dir is not None else None,
        splitter=splitter,
        embedding=store.text_embedding(),
        fixed_size=chunk_size,
        fixed_overlap=overlap,
        max_chunk_chars=max_chunk_chars,
        chroma_host=store.chroma_host or None,
        chroma_port=store.chroma_port,
    )


async def index_persona(
    source: str | Path | Mapping[str, Any],
    *,
    character: str | None = None,
    index: IndexSettings | None = None,
    context: EmbeddingAccess | None = None,
    wait: bool = True,
    progress: Progress = quiet,
) -> IndexedPersona:
    """Import a persona and build or update its character's index (the paper's ACTS splitter).

    ``source`` is a Markdown persona, a profiler ``profile.json``, a wiki page URL or saved
    ``.html``, a CoSER book ``.json`` (with ``character``), or a profile document already in
    memory (what :func:`personae.profile_document` returns). Re-indexing an edited source
    re-embeds only the sections that changed. ``index`` says where and how
    (:func:`persona_index_settings`; default: ``./personas`` with ``context``'s embedding).
    One index run at a time per folder, whoever runs it (:mod:`personae.run_lock`): a second
    waits for the first, one ``progress`` line naming it, then re-embeds only what the first
    left unchanged; with ``wait=False`` it raises :class:`~personae.errors.RunLockedError`.
    """
    from personae.graphs.store_context import EmbeddingContext
    from personae.tools.amadeus.indexing import index_document, long_chunk_warning
    from personae.tools.amadeus.indexing import index_persona as index_source
    from personae.tools.amadeus.persona_import import persona_from_profile

    store = context or EmbeddingContext()
    options = index or persona_index_settings(context=store)
    async with AsyncExitStack() as held:
        if options.memory_dir and not options.chroma_host:
            folder = Path(options.memory_dir)
            what = f"an AMADEUS index of {folder}"
            await held.enter_async_context(
                run_lock(folder, "index", what=what, wait=wait, progress=progress)
            )
        if isinstance(source, Mapping):
            doc = persona_from_profile(source, source="the profile document")
            stats = await asyncio.to_thread(index_document, doc, options)
        else:
            doc, stats = await index_source(
                str(source), character, options, settings=store.settings
            )
    return IndexedPersona(
        doc.character, doc.source, doc.source_kind, stats, long_chunk_warning(stats)
    )


def open_indexed_persona(name: str, index: IndexSettings) -> PersonaIndex:
    """The existing index of ``name``, where and how ``index`` says; never creates one.

    Every reader of a persona index (the chat, the persona QA, personality and chunk
    evaluations) opens it here, from the same :func:`persona_index_settings`, so the folder or
    Chroma server, the splitter and the embedding are the ones it was built with.

    Raises:
        InputError: no index of that character with this splitter and embedding ("unknown
            character", "embedding mismatch", "splitter mismatch").
    """
    from personae.memory.amadeus.persona_store import open_persona_index

    return open_persona_index(
        name,
        splitter=index.splitter,
        embedding=index.embedding,
        memory_dir=index.memory_dir,
        chroma_host=index.chroma_host,
        chroma_port=index.chroma_port,
    )


def indexed_character(name: str, index: IndexSettings) -> str:
    """The name ``name``'s index is kept under (case and spacing as indexed).

    Raises:
        InputError: no index of that character with this splitter and embedding.
    """
    return open_indexed_persona(name, index).character


class Chat(AsyncResources):
    """A conversation with one character; with a ``thread`` it is kept and resumed.

    Use it as an async context manager (:func:`open_chat`): the conversation's checkpoints
    live in ``<memory_dir>/chats.sqlite``, one thread per ``(character, thread)``.
    """

    def __init__(self, character: str, context: AmadeusContext, thread: str | None) -> None:
        self.character = character
        self.context = context
        self.thread = thread
        self._graph: Any = None

    async def enter(self, stack: AsyncExitStack) -> None:
        """Open the thread's checkpoints (none without a thread); leaving closes them."""
        from personae.checkpointers import open_checkpointer
        from personae.graphs.amadeus.graph import build_graph

        saver = None
        if self.thread is not None:
            memory = Path(self.context.memory_dir or DEFAULT_MEMORY)
            await asyncio.to_thread(memory.mkdir, parents=True, exist_ok=True)
            checkpoints = open_checkpointer(memory / CHAT_DB, self.context.settings)
            saver = await stack.enter_async_context(checkpoints)
        self._graph = build_graph(saver)

    def _config(self) -> RunnableConfig:
        if self.thread is None:
            return {}
        return {"configurable": {"thread_id": f"{self.character.casefold()}:{self.thread}"}}

    async def ask(self, message: str, *, history: Sequence[BaseMessage] = ()) -> ChatTurn:
        """The character's answer to ``message`` (earlier turns of the thread in view).

        ``history`` is a conversation the caller keeps (a chat app sends it whole with every
        request): its user and character turns come before ``message``, as a thread's would.
        """
        payload = self._payload(message, history)
        result = await self._graph.ainvoke(payload, self._config(), context=self.context)
        return self._turn(message, result)

    async def stream(
        self, message: str, *, history: Sequence[BaseMessage] = ()
    ) -> AsyncIterator[str | ChatTurn]:
        """:meth:`ask`, with the answer's text as the model writes it, then the whole turn.

        Yields the role-play call's tokens (Guided Selection and the Attribute Extractor are
        not the answer and are not shown), then the :class:`ChatTurn`. A model that answers at
        once (a stored answer, a server that does not stream) yields the answer in one piece.
        """
        from langchain_core.messages import AIMessageChunk

        from personae.graphs.amadeus.graph import AmadeusOutput

        shown = AmadeusOutput.__required_keys__ | AmadeusOutput.__optional_keys__
        final: dict[str, Any] = {}
        streamed = False
        async for mode, data in self._graph.astream(
            self._payload(message, history),
            self._config(),
            context=self.context,
            stream_mode=["messages", "values"],
        ):
            if mode == "values":
                final = {key: value for key, value in data.items() if key in shown}  # as ask's
                continue
            chunk, metadata = data
            if metadata.get("langgraph_node") == "respond" and isinstance(chunk, AIMessageChunk):
                text = chunk.text
                if text:
                    streamed = True
                    yield text
        turn = self._turn(message, final)
        if not streamed and turn.response:
            yield turn.response
        yield turn

    def _payload(self, message: str, history: Sequence[BaseMessage]) -> dict[str, Any]:
        payload: dict[str, Any] = {"character": self.character, "query": message}
        if history:
            payload["messages"] = list(history)
        return payload

    def _turn(self, message: str, result: Mapping[str, Any]) -> ChatTurn:
        return ChatTurn(
            self.character,
            self.context.method,
            str(result["response"]),
            dict(result),
            question=message,
        )

    async def history(self) -> list[ChatTurn]:
        """The thread's answered turns, oldest first, each with the chunks that grounded it.

        Read back from the checkpoints, so a page (or an app) can show a kept conversation
        with what Guided Selection used for every answer; a turn that failed half-way has no
        answer and is left out. Empty without a thread.
        """
        if self.thread is None:
            return []
        turns: list[ChatTurn] = []
        async for snapshot in self._graph.aget_state_history(self._config()):
            values = dict(snapshot.values)
            if snapshot.next or not values.get("response"):
                continue  # mid-turn, or the next turn's input
            turns.append(
                ChatTurn(
                    self.character,
                    self.context.method,
                    str(values["response"]),
                    values,
                    question=str(values.get("question") or ""),
                )
            )
        return turns[::-1]


def open_chat(
    character: str, *, context: AmadeusContext | None = None, thread: str | None = None
) -> Chat:
    """A conversation with ``character``, to use in an ``async with`` block.

    ``thread`` names a conversation kept in the persona memory folder's ``chats.sqlite``: a
    later chat with the same name resumes it. ``None``: each turn stands alone. Without
    ``context`` the persona index is ``./personas``, where :func:`index_persona` puts one.
    """
    from personae.graphs.amadeus.graph import AmadeusContext

    # The default index is where index_persona puts one by default (./personas): a chat with
    # no context finds the persona just indexed with none.
    return Chat(character, context or AmadeusContext(memory_dir=str(DEFAULT_MEMORY)), thread)


async def ask_character(
    character: str,
    question: str,
    *,
    context: AmadeusContext | None = None,
    thread: str | None = None,
) -> ChatTurn:
    """One turn with an indexed character: its in-character answer, grounded in its persona.

    Raises:
        InputError: the question is empty, or the character has no index.
    """
    if not question.strip():
        raise InputError("the question is empty", "ask the character something")
    async with open_chat(character, context=context, thread=thread) as chat:
        return await chat.ask(question)

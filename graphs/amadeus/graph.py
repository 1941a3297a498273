"""AMADEUS: a role-play agent that answers in character from its persona document (RAG).

Park et al. 2026 (``amadeus.txt``): retrieve the persona chunks most similar to the user's
message (the *knowledge*), run Guided Selection (Algorithm 1: up to N = 30 yes/no checks in
similarity order for chunks from which the character's attributes can be inferred, K = 2
slots, fallback to the top K + 1), extract the character's *Belief and Value* and
*Psychological Traits* from the selected chunks, and answer in character with both.

Methods (the paper's comparisons, same graph): ``amadeus``; ``naive`` (RAG over ACTS chunks:
knowledge only); ``none`` (no retrieval, the paper's "w/o RAG"). Guided Selection fans out in
waves of ``gs_wave`` checks with ``Send``; :mod:`personae.agents.amadeus.selection` replays the
sequential algorithm after each wave, so the slot is exactly the sequential one.

Multi-turn: the conversation is the ``messages`` channel, checkpointed by the caller's
checkpointer (the server's, or SQLite in the CLI), so a thread resumes after a restart. Each
turn retrieves for the new message; earlier turns reach the responder as chat history.
"""

from __future__ import annotations

import asyncio
import operator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send
from typing_extensions import TypedDict

from personae.agents.amadeus.actor import actor_messages, respond_in_character
from personae.agents.amadeus.attributes import extract_attributes
from personae.agents.amadeus.selection import (
    FALLBACK_K,
    N_ITER,
    SLOT_K,
    advance_selection,
    fallback_ranks,
    ranks_of,
)
from personae.agents.amadeus.selector import judge_chunk_relevance
from personae.errors import InputError
from personae.graphs.server_entry import server_entry
from personae.graphs.store_context import EmbeddingAccess
from personae.llm import LLMUsage
from personae.memory.amadeus.persona_chunks import Splitter
from personae.memory.amadeus.persona_store import ScoredChunk, open_persona_index
from personae.run_context import LLMContext, ModelSpec, described

Method = Literal["amadeus", "naive", "none"]
"""``amadeus`` (GS + AE), ``naive`` (RAG knowledge only), ``none`` (no retrieval)."""
METHODS: tuple[Method, ...] = ("amadeus", "naive", "none")


@described
@dataclass(frozen=True, kw_only=True)
class AmadeusContext(EmbeddingAccess, LLMContext):
    """Run settings of the AMADEUS agent (the paper's values as defaults).

    The strong model (``model``) answers in character; Guided Selection and the Attribute
    Extractor use ``gs_model`` / ``ae_model`` (the paper: GPT-4.1 whatever role-plays), sampled
    as the ``judge`` role (``temperature=judge=0`` is the spec's setting).
    """

    # -- the method and its models
    method: Method = "amadeus"
    """amadeus (GS + AE), naive (retrieval only) or none (no retrieval)."""
    gs_model: ModelSpec = ""
    """Guided Selection judge as provider:model. Empty: the strong model."""
    ae_model: ModelSpec = ""
    """Attribute Extractor as provider:model. Empty: the Guided Selection model."""
    # -- the persona index and the paper's sizes (§4)
    splitter: Splitter = "acts"
    """Which index of the character to use: acts, ats or fixed."""
    n_iter: int = N_ITER
    """N: maximum Guided Selection checks per message (the paper's 30)."""
    slot_k: int = SLOT_K
    """K: chunks Guided Selection keeps (the paper's 2)."""
    fallback_k: int = FALLBACK_K
    """Chunks used when Guided Selection keeps none: Top-(K+1)."""
    knowledge_k: int = 4
    """Chunks retrieved as knowledge (the paper gives no k)."""
    gs_wave: int = 1
    """Checks run at once; 1 is the paper's sequential cost, any size gives the same slot."""
    # -- plumbing: where the persona index is
    memory_dir: str | None = None
    """Folder of the persona index (embedded Chroma). None: this process's memory only."""
    embedding: str = ""
    """Embedding of the persona index: hashing, local (all-MiniLM-L6-v2) or openai:<model>
    (the /embeddings endpoint of this run's server). Each embedding has its own index of a
    character; one built with another is refused (embedding mismatch). Empty:
    PERSONAE_EMBEDDINGS, else hashing."""
    chroma_host: str = ""
    """Chroma server holding the persona index instead of embedded Chroma on disk. Empty:
    CHROMA_HOST, else embedded Chroma."""
    chroma_port: int = 0
    """Port of the Chroma server. 0: CHROMA_PORT, else 8000."""

    def __post_init__(self) -> None:
        """Fill empty settings from the settings (the edge); reject unusable ones."""
        super().__post_init__()
        self.fill_store()
        if self.method not in METHODS:
            raise InputError(f"unknown method {self.method!r}", "use amadeus, naive or none")
        for name in ("n_iter", "slot_k", "fallback_k", "knowledge_k", "gs_wave"):
            if int(getattr(self, name)) < 1:
                raise InputError(f"{name} must be at least 1", f"set {name} to 1 or more")

    def selector_llm(self) -> BaseChatModel:
        """The Guided Selection model."""
        return self.chat_model(self.gs_model or self.model, "judge")

    def extractor_llm(self) -> BaseChatModel:
        """The Attribute Extractor model."""
        return self.chat_model(self.ae_model or self.gs_model or self.model, "judge")


class ChunkRecord(TypedDict):
    """A retrieved persona chunk as kept in state and shown in ``--json``."""

    id: str
    """Chunk id in the persona index."""
    rank: int
    """Position in similarity order (0 = most similar)."""
    similarity: float
    """Cosine similarity to the user's message."""
    text: str
    """The chunk as stored (with its hierarchical context for ACTS)."""
    path: str
    """Section path of the chunk."""


class GSVerdict(TypedDict):
    """One Guided Selection check."""

    rank: int
    """Rank of the checked chunk."""
    chunk_id: str
    """Id of the checked chunk."""
    relevant: bool
    """The judge's answer: attributes inferable regarding the message."""
    reason: str
    """The judge's one-sentence reason (kept for audits)."""


class Attributes(TypedDict):
    """The Attribute Extractor's output."""

    belief_and_value: str
    """Principles and ideological orientations behind the character's choices."""
    psychological_traits: str
    """Personality, emotional states, interests, cognitive tendencies."""


class TurnUsage(TypedDict):
    """Model calls and tokens of one turn, per role."""

    gs_calls: int
    """Guided Selection checks made (wider waves may exceed the sequential count)."""
    ae_calls: int
    """Attribute Extractor calls."""
    rp_calls: int
    """Role-play calls."""
    input_tokens: int
    """Prompt tokens of every call."""
    output_tokens: int
    """Answer tokens of every call."""
    degraded: int
    """Checks or extractions whose answer was still invalid after retries (no, or empty)."""


def add_usage(left: TurnUsage, right: TurnUsage) -> TurnUsage:
    """Sum two usage records key by key (parallel checks report theirs separately)."""
    return TurnUsage(
        gs_calls=left.get("gs_calls", 0) + right.get("gs_calls", 0),
        ae_calls=left.get("ae_calls", 0) + right.get("ae_calls", 0),
        rp_calls=left.get("rp_calls", 0) + right.get("rp_calls", 0),
        input_tokens=left.get("input_tokens", 0) + right.get("input_tokens", 0),
        output_tokens=left.get("output_tokens", 0) + right.get("output_tokens", 0),
        degraded=left.get("degraded", 0) + right.get("degraded", 0),
    )


def _usage(role: Literal["gs_calls", "ae_calls", "rp_calls"], used: LLMUsage) -> TurnUsage:
    record = TurnUsage(**NO_USAGE)
    record[role] = used.calls
    record["input_tokens"] = used.input_tokens
    record["output_tokens"] = used.output_tokens
    record["degraded"] = used.degraded
    return record


NO_USAGE = TurnUsage(
    gs_calls=0, ae_calls=0, rp_calls=0, input_tokens=0, output_tokens=0, degraded=0
)


class AmadeusInput(TypedDict):
    """One turn: who answers and the user's message (as ``query`` or a last human message)."""

    character: str
    """The indexed character who answers."""
    query: NotRequired[str]
    """The user's message; or send it as the last of ``messages``."""
    messages: NotRequired[list[AnyMessage]]
    """Chat messages to add to the conversation (Studio's chat input)."""


class AmadeusOutput(TypedDict):
    """The answer and everything that grounded it."""

    response: str
    """The character's answer."""
    messages: list[AnyMessage]
    """The whole conversation so far."""
    knowledge: list[ChunkRecord]
    """Top-k chunks used as knowledge (empty for ``none``)."""
    selected: list[ChunkRecord]
    """Guided Selection's slot S (or the fallback chunks)."""
    gs_failed: bool
    """True when no check came back True and the top K + 1 chunks were used."""
    verdicts: list[GSVerdict]
    """Every Guided Selection check of this turn."""
    attributes: Attributes | None
    """The Attribute Extractor's output (``amadeus`` only)."""
    usage: TurnUsage
    """Model calls and tokens of this turn."""


class AmadeusState(TypedDict):
    """The conversation and the current turn's working data."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation; checkpointed, so a thread resumes."""
    character: str
    """The character who answers."""
    query: str
    """Input message of the turn; cleared once it is added to ``messages``."""
    question: str
    """The user's message this turn answers."""
    knowledge: list[ChunkRecord]
    """Top ``knowledge_k`` chunks."""
    candidates: list[ChunkRecord]
    """Top ``n_iter`` chunks: Algorithm 1's C_sorted, cut to what it can examine."""
    verdicts: Annotated[list[GSVerdict], operator.add]
    """Checks of this turn (reset at each turn's start)."""
    pending: list[int]
    """Ranks of the next wave; empty when Guided Selection has finished."""
    gs_examined: int
    """t: checks the sequential algorithm made."""
    selected: list[ChunkRecord]
    """Slot S, or the fallback chunks."""
    gs_failed: bool
    """Whether the fallback fired."""
    attributes: Attributes | None
    """Attribute Extractor output."""
    response: str
    """The character's answer."""
    usage: Annotated[TurnUsage, add_usage]
    """Calls and tokens of this turn (reset at each turn's start)."""


class JudgeTask(TypedDict):
    """What one ``Send`` to :func:`judge_chunk` carries."""

    character: str
    """Who the check is about."""
    question: str
    """The user's message."""
    chunk: ChunkRecord
    """The chunk to check."""


def _last_human(messages: list[AnyMessage]) -> str:
    if messages and isinstance(messages[-1], HumanMessage):
        return str(messages[-1].content)
    return ""


def start_turn(state: AmadeusState) -> dict[str, Any]:
    """Add the user's message to the conversation and clear the previous turn's data."""
    character = str(state.get("character") or "").strip()
    query = str(state.get("query") or "").strip()
    question = query or _last_human(list(state.get("messages") or []))
    if not character:
        raise InputError("no character given", "pass the character to talk to")
    if not question.strip():
        raise InputError("the message is empty", "send a non-empty message")
    update: dict[str, Any] = {
        "character": character,
        "query": "",
        "question": question,
        "knowledge": [],
        "candidates": [],
        "verdicts": Overwrite([]),
        "pending": [],
        "gs_examined": 0,
        "selected": [],
        "gs_failed": False,
        "attributes": None,
        "response": "",
        "usage": Overwrite(NO_USAGE),
    }
    if query:
        update["messages"] = [HumanMessage(query)]
    return update


def route_method(
    state: AmadeusState, runtime: Runtime[AmadeusContext]
) -> Literal["retrieve", "respond"]:
    """``none`` answers without retrieval; the other methods retrieve first."""
    return "respond" if runtime.context.method == "none" else "retrieve"


def _search(context: AmadeusContext, character: str, question: str) -> list[ScoredChunk]:
    index = open_persona_index(
        character,
        splitter=context.splitter,
        embedding=context.text_embedding(),
        memory_dir=context.memory_dir,
        chroma_host=context.chroma_host,
        chroma_port=context.chroma_port,
    )
    wanted = context.knowledge_k
    if context.method == "amadeus":
        wanted = max(wanted, context.n_iter)
    return index.query(question, wanted)


def _record(chunk: ScoredChunk) -> ChunkRecord:
    return ChunkRecord(
        id=chunk.id, rank=chunk.rank, similarity=chunk.similarity, text=chunk.text, path=chunk.path
    )


async def retrieve(state: AmadeusState, runtime: Runtime[AmadeusContext]) -> dict[str, Any]:
    """One similarity query: the top ``knowledge_k`` are knowledge, the top N are candidates."""
    context = runtime.context
    found = await asyncio.to_thread(_search, context, state["character"], state["question"])
    records = [_record(chunk) for chunk in found]
    return {
        "knowledge": records[: context.knowledge_k],
        "candidates": records[: context.n_iter] if context.method == "amadeus" else [],
    }


def route_retrieved(
    state: AmadeusState, runtime: Runtime[AmadeusContext]
) -> Literal["select_chunks", "respond"]:
    """Naive RAG answers from the knowledge; AMADEUS runs Guided Selection."""
    return "select_chunks" if runtime.context.method == "amadeus" else "respond"


def select_chunks(state: AmadeusState, runtime: Runtime[AmadeusContext]) -> dict[str, Any]:
    """Replay Algorithm 1 over the checks so far: the slot, t, and the next wave to check."""
    context = runtime.context
    candidates = state["candidates"]
    progress = advance_selection(
        ranks_of(state.get("verdicts") or []),
        len(candidates),
        n_iter=context.n_iter,
        slot_k=context.slot_k,
        wave=context.gs_wave,
    )
    return {
        "pending": list(progress.pending),
        "selected": [candidates[rank] for rank in progress.selected],
        "gs_examined": progress.examined,
    }


def route_selection(
    state: AmadeusState,
) -> list[Send] | Literal["fallback_top", "extract_attributes"]:
    """Fan the next wave out to :func:`judge_chunk`; else the slot is final (or empty)."""
    if state["pending"]:
        by_rank = {chunk["rank"]: chunk for chunk in state["candidates"]}
        return [
            Send(
                "judge_chunk",
                JudgeTask(
                    character=state["character"], question=state["question"], chunk=by_rank[rank]
                ),
            )
            for rank in state["pending"]
        ]
    return "extract_attributes" if state["selected"] else "fallback_top"


async def judge_chunk(state: JudgeTask, runtime: Runtime[AmadeusContext]) -> dict[str, Any]:
    """One Guided Selection check of one chunk."""
    model = runtime.context.selector_llm()
    verdict, used = await judge_chunk_relevance(
        model, state["character"], state["question"], state["chunk"]["text"]
    )
    record = GSVerdict(
        rank=state["chunk"]["rank"],
        chunk_id=state["chunk"]["id"],
        relevant=verdict.relevant,
        reason=verdict.reason,
    )
    return {"verdicts": [record], "usage": _usage("gs_calls", used)}


def fallback_top(state: AmadeusState, runtime: Runtime[AmadeusContext]) -> dict[str, Any]:
    """No check came back True: use the top K + 1 chunks and record the failure."""
    ranks = fallback_ranks(len(state["candidates"]), runtime.context.fallback_k)
    return {"selected": [state["candidates"][rank] for rank in ranks], "gs_failed": True}


async def extract_character_attributes(
    state: AmadeusState, runtime: Runtime[AmadeusContext]
) -> dict[str, Any]:
    """Belief and value, psychological traits, from the slot (or the fallback chunks)."""
    chunks = [chunk["text"] for chunk in state["selected"]]
    if not chunks:
        return {"attributes": None}
    model = runtime.context.extractor_llm()
    found, used = await extract_attributes(model, state["character"], state["question"], chunks)
    attributes = Attributes(
        belief_and_value=found.belief_and_value, psychological_traits=found.psychological_traits
    )
    return {"attributes": attributes, "usage": _usage("ae_calls", used)}


async def respond(state: AmadeusState, runtime: Runtime[AmadeusContext]) -> dict[str, Any]:
    """Answer in character from the knowledge, the slot and the attributes."""
    method = runtime.context.method
    attributes = state.get("attributes") or Attributes(belief_and_value="", psychological_traits="")
    history = list(state.get("messages") or [])[:-1]
    messages = actor_messages(
        state["character"],
        state["question"],
        knowledge=[c["text"] for c in state["knowledge"]] if method != "none" else None,
        selected=[c["text"] for c in state["selected"]] if method == "amadeus" else None,
        belief_and_value=attributes["belief_and_value"],
        psychological_traits=attributes["psychological_traits"],
        history=history,
    )
    text, used = await respond_in_character(runtime.context.llm("strong"), messages)
    return {"response": text, "messages": [AIMessage(text)], "usage": _usage("rp_calls", used)}


builder = StateGraph(
    AmadeusState,
    context_schema=AmadeusContext,
    input_schema=AmadeusInput,
    output_schema=AmadeusOutput,
)
builder.add_node(start_turn)
builder.add_node(retrieve)
builder.add_node(select_chunks)
builder.add_node("judge_chunk", judge_chunk, input_schema=JudgeTask)
builder.add_node(fallback_top)
builder.add_node("extract_attributes", extract_character_attributes)
builder.add_node(respond)
builder.add_edge(START, "start_turn")
builder.add_conditional_edges("start_turn", route_method)
builder.add_conditional_edges("retrieve", route_retrieved)
builder.add_conditional_edges(
    "select_chunks", route_selection, ["judge_chunk", "fallback_top", "extract_attributes"]
)
builder.add_edge("judge_chunk", "select_chunks")
builder.add_edge("fallback_top", "extract_attributes")
builder.add_edge("extract_attributes", "respond")
builder.add_edge("respond", END)

graph = builder.compile(name="amadeus")
served = server_entry(graph)
"""What langgraph.json serves: ``graph``, once a server run's raw context passed its check."""


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the AMADEUS agent with an optional checkpointer (multi-turn chat)."""
    return builder.compile(checkpointer=checkpointer, name="amadeus")

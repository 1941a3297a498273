"""reset_runtime clears every process-global cache; a new cache that does not register fails."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from bookmarks_world import write_storyline
from source_tree import parsed

from personae.graphs.bookmarks.resources import resources_for
from personae.llm import resolve_chat_model
from personae.memory.amadeus.persona_store import open_client
from personae.memory.bookmarks.storyline import open_storyline
from personae.memory.embeddings import open_embedding
from personae.process_caches import registered_caches
from personae.testing import ScriptedChatModel, override_models, reset_runtime

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("agents", "tools", "memory", "graphs", "evals", "personae")
CACHE_CALLS = {"dict", "set", "OrderedDict", "WeakKeyDictionary", "WeakValueDictionary"}
CACHE_CALLS |= {"ResourceCache", "defaultdict"}
NOT_CACHES = {
    # The BLAS thread counts to restore while a thread limit is active: state of a `with`
    # block, restored when it ends, not something a lookup fills.
    "memory/blas.py": {"_saved"},
    # The CLI's argument parser, built once: it holds no setting (each handler reads the
    # environment at the edge) and parsing never changes it.
    "personae/cli.py": {"_parser"},
    # The scripted model's tool spec per schema class: a class's JSON schema never changes,
    # and its entry dies with the class (weak keys).
    "personae/testing.py": {"_TOOL_SPECS"},
    # The lock files this process holds (without fcntl): a held lock, released when its run
    # ends; clearing it would let a second run take a key the first still holds.
    "personae/run_lock.py": {"_HELD_HERE"},
    # The log level each connected MCP client set: the session's own state, gone with the
    # session (weak keys), not something a lookup fills.
    "personae/mcp/notifications.py": {"_CHOSEN"},
}


def _is_cache_value(value: ast.expr | None) -> bool:
    """An empty container a module fills at run time (``{}``, ``dict()``, ``ResourceCache()``)."""
    if isinstance(value, ast.Dict):
        return not value.keys
    if isinstance(value, ast.Set | ast.List):
        return not value.elts
    if isinstance(value, ast.Call) and not value.args:
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in CACHE_CALLS
    return False


def _is_cached_function(node: ast.stmt) -> bool:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    names = set()
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        names.add(target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", ""))
    return bool(names & {"cache", "lru_cache"})


def path_key(path: Path) -> str:
    """``path`` relative to the project root, as the caches are reported."""
    return str(path.relative_to(ROOT))


def module_caches() -> dict[str, list[str]]:
    """Module-level caches of the package source, by file: ``{}`` values and cached functions."""
    found: dict[str, list[str]] = {}
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "process_caches.py":
                continue
            for node in parsed(path).body:
                names: list[str] = []
                if isinstance(node, ast.Assign) and _is_cache_value(node.value):
                    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                elif isinstance(node, ast.AnnAssign) and _is_cache_value(node.value):
                    names = [node.target.id] if isinstance(node.target, ast.Name) else []
                elif isinstance(node, ast.FunctionDef) and _is_cached_function(node):
                    names = [node.name]
                names = [n for n in names if n not in NOT_CACHES.get(path_key(path), set())]
                if names:
                    found.setdefault(str(path.relative_to(ROOT)), []).extend(names)
    return found


def _cleared_in(path: str) -> str:
    """The source of a module's ``clears_on_reset(...)`` calls and of the functions they pass."""
    tree = parsed(ROOT / path)
    functions = {
        node.name: ast.unparse(node) for node in tree.body if isinstance(node, ast.FunctionDef)
    }
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "clears_on_reset"
    ]
    passed = [functions.get(getattr(call.args[-1], "id", ""), "") for call in calls]
    return "\n".join([*map(ast.unparse, calls), *passed])


def test_every_module_level_cache_registers_its_clear() -> None:
    caches = module_caches()
    assert len([n for names in caches.values() for n in names]) >= 16
    unregistered = [
        f"{path}: {name}"
        for path, names in caches.items()
        for name in names
        if name not in _cleared_in(path)
    ]
    assert unregistered == []


def per_call_schema_builders() -> list[str]:
    """``module.function`` of every builder decorated ``@per_call_schema`` (registers itself)."""
    found = []
    for path in (ROOT / "agents").rglob("*.py"):
        module = ".".join(("personae", *path.relative_to(ROOT).with_suffix("").parts))
        for node in parsed(path).body:
            if isinstance(node, ast.FunctionDef) and any(
                "per_call_schema" in ast.unparse(d) for d in node.decorator_list
            ):
                found.append(f"{module}.{node.name}")
    return found


def test_every_per_call_schema_builder_is_cleared_on_reset() -> None:
    builders = per_call_schema_builders()
    assert len(builders) >= 17
    for name in builders:
        importlib.import_module(name.rsplit(".", 1)[0])
    assert set(builders) <= set(registered_caches())


def test_reset_runtime_clears_every_registered_cache() -> None:
    holding = list(module_caches())
    for folder in FOLDERS:  # every module that holds a cache, imported
        for path in holding:
            if path.startswith(folder):
                parts = Path(path).with_suffix("").parts
                importlib.import_module(".".join(("personae", *parts[parts[0] == "personae" :])))
    builders = per_call_schema_builders()
    for name in builders:
        importlib.import_module(name.rsplit(".", 1)[0])
    # 25 caches of state (storylines, banks, clients, exact-search snapshots, InCharacter's
    # templates, the released matcher's tokens, swept folders, the web page's Markdown parser,
    # ...) and one per schema builder.
    assert len(registered_caches()) == 25 + len(builders)


def test_after_a_reset_nothing_cached_comes_back(tmp_path: Path) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    scripted = ScriptedChatModel()
    override_models(scripted)
    before = (
        open_storyline(str(story)),
        resources_for(str(story), str(tmp_path / "memory"), "", open_embedding("hashing")),
        open_client(str(tmp_path / "persona")),
        open_embedding("hashing"),
    )
    assert resolve_chat_model("openai:x") is scripted
    assert open_storyline(str(story)) is before[0]  # cached while nothing is reset
    reset_runtime()
    after = (
        open_storyline(str(story)),
        resources_for(str(story), str(tmp_path / "memory"), "", open_embedding("hashing")),
        open_client(str(tmp_path / "persona")),
        open_embedding("hashing"),
    )
    assert all(a is not b for a, b in zip(after, before, strict=True))
    assert resolve_chat_model("openai:x", base_url="http://127.0.0.1:9") is not scripted

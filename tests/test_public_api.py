"""The front door: ``from personae import ...`` keeps its names, loads them lazily, and is all
the examples, the README snippets and the MCP tools use.

A public name that disappears breaks every app importing it: the frozen list below changes
only with a release note. The type checkers see what ``__getattr__`` loads (the
``TYPE_CHECKING`` imports name the same objects), and ``import personae`` stays cheap.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

import personae

ROOT = Path(__file__).resolve().parents[1]
FROZEN: tuple[str, ...] = (
    # runners
    "profile_character", "Profile", "profile_characters", "ProfileBatch", "CharacterRow",
    "read_character_list", "predict_action", "ActionStep", "index_persona",
    "persona_index_settings", "IndexedPersona", "open_chat", "Chat", "ask_character", "ChatTurn",
    "import_novel", "ImportedNovel", "build_arcs", "ArcBuild", "act_at_chapter", "ChapterAnswer",
    # benchmarks and evaluations
    "evaluate_profiles", "run_bench", "BenchConfig", "run_personality_eval", "PersonalityRun",
    "run_persona_qa", "QARun", "analyse_persona_chunks", "ChunkAnalysis", "export_rating_sheet",
    "evaluate_arcane", "ArcaneEvalRun", "evaluate_pov_control", "perturb_arcane",
    "write_arcane_report", "export_training_data", "TrainingExport", "export_vote_sheet",
    "read_votes", "resume_with_votes", "VoteSheet",
    # graph builders
    "build_profiler_graph", "build_bookmarks_graph", "build_amadeus_graph",
    "build_arc_build_graph", "build_arcane_roleplay_graph",
    # tool factories
    "create_profile_tool", "create_storyline_memory_tool", "create_ask_character_tool",
    "create_arcane_act_tool",
    # contexts, settings, records, errors
    "LLMContext", "ProfilerContext", "BookmarksContext", "AmadeusContext", "ArcBuildContext",
    "ArcaneEvalContext", "RoleplayContext", "Settings", "load_settings", "profile_document",
    "PersonaeError",
    "__version__",
)  # fmt: skip
"""Every public name; removing one from ``personae.__all__`` fails this test."""
PUBLIC_MODULES = ("personae", "personae.testing")
"""What an app imports from: the front door, and the test kit (a scripted model)."""
HEAVY = ("langgraph", "langchain_core", "langchain_openai", "openai", "chromadb", "httpx")


def _exported(name: str) -> object:
    """The object behind a public name (its module may live on a branch not merged yet)."""
    module = personae._EXPORTS[name][0] if name in personae._EXPORTS else "personae"
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not in this tree yet")
    return getattr(personae, name)


def test_no_public_name_disappears() -> None:
    assert set(FROZEN) - set(personae.__all__) == set()
    assert sorted(personae.__all__) == sorted({*personae._EXPORTS, "__version__"})


@pytest.mark.parametrize("name", sorted(n for n in FROZEN if n != "__version__"))
def test_every_public_name_loads_and_documents_itself(name: str) -> None:
    value = _exported(name)
    module, attribute = personae._EXPORTS[name]
    assert value is getattr(importlib.import_module(module), attribute)
    doc = (getattr(value, "__doc__", None) or "").strip()
    assert doc and not doc.startswith(f"{attribute}("), f"{name} has no docstring of its own"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'profile_charcter'"):
        _ = personae.profile_charcter
    assert "predict_action" in dir(personae)


def _type_checking_imports() -> dict[str, tuple[str, str]]:
    """``{public name: (module, attribute)}`` of ``personae/__init__.py``'s TYPE_CHECKING block."""
    tree = ast.parse((ROOT / "personae" / "__init__.py").read_text(encoding="utf-8"))
    [block] = [
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    found: dict[str, tuple[str, str]] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names:
            found[alias.asname or alias.name] = (node.module, alias.name)
    return found


def test_type_checkers_see_what_the_lazy_loader_loads() -> None:
    """IDEs, pyright and mypy read the TYPE_CHECKING imports; the run time reads _EXPORTS."""
    assert _type_checking_imports() == personae._EXPORTS


def test_import_personae_loads_no_heavy_library() -> None:
    probe = "import sys, personae; print(','.join(sorted({m.split('.')[0] for m in sys.modules})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.strip().split(","))
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def non_public_imports(source: str, where: str) -> list[str]:
    """Imports of a Personae module other than the public ones, or of a non-public name."""
    wrong: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
            wrong += [
                f"{where}: import {m}" for m in modules if _ours(m) and m not in PUBLIC_MODULES
            ]
        elif isinstance(node, ast.ImportFrom) and node.module and _ours(node.module):
            if node.module not in PUBLIC_MODULES:
                wrong.append(f"{where}: from {node.module} import ...")
            elif node.module == "personae":
                hidden = [a.name for a in node.names if a.name not in personae.__all__]
                wrong += [f"{where}: from personae import {name}" for name in hidden]
    return wrong


def _ours(module: str) -> bool:
    return module == "personae" or module.startswith("personae.")


def readme_snippets() -> list[tuple[str, str]]:
    """Every python block of the README and of the manual's pages."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
        name = page.relative_to(ROOT)
        found += [(f"{name} python block {n}", block) for n, block in enumerate(blocks, 1)]
    return found


def test_examples_and_readme_snippets_import_only_public_names() -> None:
    sources = [(str(p.relative_to(ROOT)), p.read_text()) for p in (ROOT / "examples").rglob("*.py")]
    snippets = readme_snippets()
    assert len(sources) >= 2 and len(snippets) >= 2
    wrong = [w for where, text in [*sources, *snippets] for w in non_public_imports(text, where)]
    assert wrong == []


def test_the_import_check_catches_a_deep_path() -> None:
    source = (
        "from personae import predict_action\n"
        "from personae.graphs.bookmarks.graph import build_graph\n"
        "import personae.tools.wiki\n"
        "from personae import _EXPORTS\n"
    )
    assert non_public_imports(source, "x") == [
        "x: from personae.graphs.bookmarks.graph import ...",
        "x: import personae.tools.wiki",
        "x: from personae import _EXPORTS",
    ]


def test_the_mcp_tools_call_only_the_public_api() -> None:
    """The MCP server is a thin caller: its tools import Personae only through the front door."""
    source = (ROOT / "personae" / "mcp" / "tools.py").read_text(encoding="utf-8")
    allowed = {
        "personae.errors",  # the error type
        "personae.mcp.options",  # its own options
        # profile_character's answer: the LangChain tool's rendering and the folder's key
        # (candidates for the Profile record itself)
        "personae.graphs.characterhub.tool",
        "personae.memory.characterhub.profile_store",
    }
    wrong = [w for w in non_public_imports(source, "mcp/tools.py") if w.split()[2] not in allowed]
    assert wrong == []


def test_the_package_and_its_description_name_the_four_papers() -> None:
    """Both once named two papers (CharacterHub, BOOKMARKS) after AMADEUS and ARCANE landed."""
    import tomllib

    description = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    summary = (personae.__doc__ or "").split("::")[0]
    for paper in ("CharacterHub", "BOOKMARKS", "AMADEUS", "ARCANE"):
        assert paper in description and paper in summary, paper

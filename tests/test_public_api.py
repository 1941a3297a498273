"""The two front doors: ``from personae import ...`` (apps) and ``from personae.evals import ...``
(each paper's protocol) load their names lazily from one table each, and are all the examples,
the README snippets and the MCP tools use.

Each table (``_EXPORTS``) is the one list of a face's public names: ``__all__`` and the
``TYPE_CHECKING`` imports that IDEs, pyright and mypy read are generated from it
(``scripts/public_names.py``), and these tests fail when they disagree, or when a name's
module is missing (no skip: a public name that cannot load breaks every app importing it).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import personae
import personae.evals
from personae.public_names import load_public_name

ROOT = Path(__file__).resolve().parents[1]
FACES = {"personae": personae, "personae.evals": personae.evals}
PUBLIC_MODULES = ("personae", "personae.evals", "personae.testing")
"""What an app imports from: the two faces, and the test kit (a scripted model)."""
HEAVY = ("langgraph", "langchain_core", "langchain_openai", "openai", "chromadb", "httpx")


def generator() -> ModuleType:
    """scripts/public_names.py, which writes ``__all__`` and the imports from the tables."""
    spec = importlib.util.spec_from_file_location(
        "personae_public_names_script", ROOT / "scripts/public_names.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def public_names() -> list[tuple[str, str]]:
    """Every (face, name) of both tables."""
    return [(face, name) for face, module in FACES.items() for name in sorted(module._EXPORTS)]


@pytest.mark.parametrize(("face", "name"), public_names())
def test_every_public_name_loads_and_documents_itself(face: str, name: str) -> None:
    module, attribute = FACES[face]._EXPORTS[name]
    assert importlib.util.find_spec(module) is not None, f"{face}.{name}: {module} is missing"
    value = getattr(FACES[face], name)
    assert value is getattr(importlib.import_module(module), attribute)
    doc = (getattr(value, "__doc__", None) or "").strip()
    assert doc and not doc.startswith(f"{attribute}("), f"{name} has no docstring of its own"


def test_a_name_whose_module_is_missing_fails_to_load() -> None:
    """A table entry pointing at a missing module raises (the test above fails, never skips)."""
    table = {"gone": ("personae.runners.no_such_module", "gone")}
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        load_public_name({"__name__": "personae"}, table, "gone")


@pytest.mark.parametrize("face", sorted(FACES))
def test_all_and_the_type_checking_imports_are_generated_from_the_table(face: str) -> None:
    """IDEs, pyright and mypy read the TYPE_CHECKING imports and ``__all__``; the lazy loader
    reads the table. Fix: ``uv run python scripts/public_names.py``."""
    script = generator()
    path = script.FRONT_DOORS[face]
    imports, names = script.declared(path)
    table = script.table(path)
    assert table == FACES[face]._EXPORTS
    assert imports == table, "run `uv run python scripts/public_names.py`"
    assert names == sorted({*table, *script.EXTRA[face]}) == sorted(FACES[face].__all__)


def test_the_generator_writes_what_the_check_reads() -> None:
    script = generator()
    text = script.block({"run": ("personae.x", "run"), "Alias": ("personae.y", "Name")}, ("v",))
    assert "    from personae.x import run\n" in text
    assert "    from personae.y import Name as Alias\n" in text
    assert '__all__ = [\n    "Alias",\n    "run",\n    "v",\n]' in text


def test_apps_and_protocols_are_two_faces() -> None:
    """``personae`` holds what an app uses; each paper's evaluation protocol is in
    ``personae.evals`` (its runners, contexts and results), never in both."""
    app, protocols = personae._EXPORTS, personae.evals._EXPORTS
    assert set(app) & set(protocols) == set()
    assert [n for n, (module, _) in app.items() if module.startswith("personae.evals")] == []
    eval_runners = re.compile(r"personae\.runners\.\w+_(eval|export|votes|personality|qa)$")
    assert [n for n, (module, _) in app.items() if eval_runners.match(module)] == []
    assert {"evaluate_profiles", "run_bench", "evaluate_personality", "evaluate_persona_qa"} <= set(
        protocols
    )
    assert {"evaluate_arcane", "perturb_arcane", "export_training_data"} <= set(protocols)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'profile_charcter'"):
        _ = personae.profile_charcter
    with pytest.raises(AttributeError, match="'personae.evals' has no attribute 'run_bnech'"):
        _ = personae.evals.run_bnech
    assert "predict_action" in dir(personae) and "run_bench" in dir(personae.evals)


def test_an_evaluation_asked_of_the_apps_face_names_its_face() -> None:
    with pytest.raises(AttributeError, match="from personae.evals import run_bench"):
        _ = personae.run_bench
    assert "run_bench" not in dir(personae)


def test_import_personae_loads_no_heavy_library() -> None:
    probe = (
        "import sys, personae, personae.evals; "
        "print(','.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
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
            elif node.module in FACES:
                face = FACES[node.module].__all__
                hidden = [a.name for a in node.names if a.name not in face]
                wrong += [f"{where}: from {node.module} import {name}" for name in hidden]
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
        "personae.mcp.notifications",  # its own progress and log notifications
        "personae.mcp.profile_runs",  # its own runs: one per character, queued (public runner)
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

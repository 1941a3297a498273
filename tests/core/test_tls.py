"""Every HTTP client the package builds shares the process's one TLS context.

A client built without ``verify=`` loads the whole CA bundle (~40 ms of CPU): the model's
window probe did so on every model, ``doctor`` on every check, the OpenAI SDK twice per model.
"""

from __future__ import annotations

import ast
from pathlib import Path

from source_tree import walked

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("personae", "agents", "tools", "memory", "graphs", "evals")
CLIENTS = {"AsyncClient", "Client", "DefaultAsyncHttpxClient", "DefaultHttpxClient"}


def test_every_http_client_is_built_with_the_shared_context() -> None:
    unshared = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in walked(path):
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                    continue
                if node.func.attr in CLIENTS and not any(k.arg == "verify" for k in node.keywords):
                    unshared.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert unshared == []

"""The cache key and cache shared by the BOOKMARKS resources and the baselines' stores."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from personae.errors import InputError
from personae.graphs.bookmarks.resource_cache import ResourceCache, storyline_key


def test_the_key_is_memory_folder_file_version_and_chroma_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CHROMA_HOST", raising=False)
    story = tmp_path / "club.jsonl"
    story.write_text('{"action": "Kyon sighs.", "character": "Kyon"}\n', encoding="utf-8")
    key = storyline_key(str(story), str(tmp_path / "mem"))
    monkeypatch.chdir(tmp_path)
    assert storyline_key("club.jsonl", "mem") == key
    assert key.memory_dir == tmp_path.resolve() / "mem" and key.chroma == ""
    assert key.storyline().name == "club"
    assert storyline_key(str(story), None) != key
    assert storyline_key(str(story), None).memory_dir is None
    on_server = storyline_key(str(story), "mem", "chroma.local:8000")
    assert on_server.chroma == "chroma.local:8000" and on_server != storyline_key(str(story), "mem")
    settings = on_server.chroma_settings()
    assert settings is not None and (settings.chroma_host, settings.chroma_port) == (
        "chroma.local",
        8000,
    )
    monkeypatch.setenv("CHROMA_HOST", "elsewhere")  # the key never reads the environment
    assert storyline_key(str(story), "mem").chroma == ""
    stat = story.stat()
    os.utime(story, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert storyline_key(str(story), "mem") != key
    with pytest.raises(InputError, match="does not exist"):
        storyline_key(str(tmp_path / "nope.jsonl"), None)


def test_each_resource_is_built_once_per_key_until_cleared() -> None:
    cache: ResourceCache[object] = ResourceCache()
    builds: list[str] = []

    def build(name: str) -> object:
        time.sleep(0.01)  # concurrent callers arrive while the first build runs
        builds.append(name)
        return object()

    found: list[object] = []
    threads = [
        threading.Thread(target=lambda: found.append(cache.get("a", lambda: build("a"))))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert builds == ["a"] and all(item is found[0] for item in found)
    assert cache.get("b", lambda: build("b")) is not found[0] and builds == ["a", "b"]
    cache.clear()
    assert cache.get("a", lambda: build("a")) is not found[0] and builds == ["a", "b", "a"]

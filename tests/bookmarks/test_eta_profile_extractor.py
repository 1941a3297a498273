from __future__ import annotations

import pytest

from personae.agents.bookmarks.profile_extractor import (
    EMPTY_PROFILE,
    extract_profile,
    update_profile,
)
from personae.errors import RemoteError
from personae.memory.bookmarks.storyline import StoryAction
from personae.testing import ScriptedChatModel, prompt_text

CHUNK = (
    StoryAction(3, "ch1", "Haruhi: I want to meet aliens!", ("Haruhi",)),
    StoryAction(4, "ch1", "Kyon sighs.", ("Kyon",)),
)


async def test_extract_profiles_the_character_from_the_chunk_texts() -> None:
    model = ScriptedChatModel(responders={"ChunkProfile": lambda _: {"profile": " Bold. "}})
    profile, usage = await extract_profile(model, character="Haruhi", story="haruhi", chunk=CHUNK)
    assert profile == "Bold." and usage.calls == 1
    text = prompt_text(model.calls_for("ChunkProfile")[0])
    assert '200-word, narrative-style character profile for Haruhi in "haruhi"' in text
    assert "Haruhi: I want to meet aliens!\n---\nKyon sighs." in text
    hidden, _ = await extract_profile(model, character="Haruhi", story=None, chunk=CHUNK)
    assert "for Haruhi." in prompt_text(model.calls_for("ChunkProfile")[1])


async def test_update_folds_the_new_profile_into_the_previous_one() -> None:
    model = ScriptedChatModel(responders={"UpdatedProfile": lambda _: {"profile": "Both."}})
    profile, usage = await update_profile(model, profile="Old.", new_profile="New.")
    assert profile == "Both." and usage.calls == 1
    text = prompt_text(model.calls_for("UpdatedProfile")[0])
    assert text.startswith(
        "# Main Profile\nOld.\n\n# New Summarized Profile (From New Episodes)\nNew."
    )
    await update_profile(model, profile="", new_profile="New.")
    assert f"# Main Profile\n{EMPTY_PROFILE}" in prompt_text(model.calls_for("UpdatedProfile")[1])


async def test_an_empty_profile_is_retried_then_an_error() -> None:
    model = ScriptedChatModel(responders={"UpdatedProfile": lambda _: {"profile": " "}})
    with pytest.raises(RemoteError, match="malformed UpdatedProfile output 3 times"):
        await update_profile(model, profile="Old.", new_profile="New.")

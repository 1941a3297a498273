"""A profile as the Getting started tour writes it, for the web page's tests and benchmark.

The profiler runs for real (:func:`personae.profile_character`, the tour's Mara Vell from the
sample wiki, ``--no-web``) with the sample world's scripted model, so the page is tested on the
``profile.json`` shape Personae writes today, not on a hand-made imitation of it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fake_openai import ChatResponder
from sample_world import SAMPLES, sample_model

from personae import ProfilerContext, profile_character
from personae.loopback import LoopbackWebServer
from personae.sample_wiki import MediaWikiSite, saved_pages
from personae.testing import override_models

NAME, FRANCHISE = "Mara Vell", "The Keeper of Gull Rock"
KEY = "mara-vell--the-keeper-of-gull-rock"


def write_sample_profile(profiles_dir: Path) -> Path:
    """Profile Mara Vell from the sample wiki into ``profiles_dir``; her ``profile.json``."""
    with (
        LoopbackWebServer(MediaWikiSite(saved_pages(SAMPLES / "wiki")).route) as wiki,
        override_models(sample_model()),
    ):
        profile = asyncio.run(
            profile_character(
                NAME,
                franchise=FRANCHISE,
                wiki=wiki.url,
                out=profiles_dir,
                context=ProfilerContext(web_search=False, model="openai:scripted"),
            )
        )
    return profile.paths.profile_json


ANSWER = "My hands know the pressure points; the lamp knows my hands."
"""What the loopback model answers in character."""
KEPT_FACT = "I strike pressure points."
"""The one fact Guided Selection keeps: the loopback judge answers yes for its chunk only."""


def _prompt(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(message.get("content") or "") for message in messages)


def chat_responders() -> dict[str, ChatResponder]:
    """The loopback model's answers for an AMADEUS turn about the sample profile."""
    return {
        "RelevanceVerdict": lambda messages: {
            "reason": "states what she does",
            "relevant": KEPT_FACT in _prompt(messages),
        },
        "CharacterAttributes": lambda messages: {
            "belief_and_value": "Duty to the light.",
            "psychological_traits": "Steady, watchful.",
        },
        "text": lambda messages: ANSWER,
    }

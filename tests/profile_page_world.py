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
from langchain_core.messages import BaseMessage
from profiler_world import FALSE_MARK, shown_ids
from sample_world import SAMPLES, sample_model

from personae import ProfilerContext, profile_character
from personae.loopback import LoopbackWebServer
from personae.sample_wiki import MediaWikiSite, saved_pages
from personae.testing import ScriptedChatModel, override_models

NAME, FRANCHISE = "Mara Vell", "The Keeper of Gull Rock"
KEY = "mara-vell--the-keeper-of-gull-rock"
KEPT_FACT = "I know the lamp's clockwork loses four minutes a week in cold weather."
"""A fact of her profile; in chat, the one Guided Selection keeps (the loopback judge says yes
for its chunk only)."""
DROPPED_FACT = f"I was crowned {FALSE_MARK} at the harbour fair."
"""The planted false fact the scripted citation check drops."""
FACTS = (  # (dimension, text, index of the cited source in the order the wiki gave them)
    ("identity", "I am nineteen, the assistant keeper of the Gull Rock light.", 0),
    ("appearance", "I am tall and wind-burned; I keep my dark hair tied back for the climb.", 1),
    ("personality", "I am practical, quiet and careful: I say nothing before I am sure.", 2),
    ("ability", KEPT_FACT, 2),
    ("experience", "On the night of the storm I stuffed the broken pane and relit the lamp.", 3),
    ("relationship", "My father Tobias kept the light for thirty years.", 4),
    ("other", DROPPED_FACT, 0),
)


def mara_draft(messages: list[BaseMessage]) -> dict[str, Any]:
    """The rewrite's first-person draft of Mara, each fact citing the wiki section stating it."""
    ids = shown_ids(messages)
    return {
        "profile": "I am Mara Vell, assistant keeper of the Gull Rock light. I grew up on the "
        "rock with my father Tobias, and on the night of the storm I kept the lamp burning.",
        "canon": "The Keeper of Gull Rock",
        "facts": [
            {"dimension": d, "text": text, "source_ids": [ids[min(i, len(ids) - 1)]]}
            for d, text, i in FACTS
        ],
        "conflicts": [],
    }


def mara_model() -> ScriptedChatModel:
    """The sample world's model, its profile draft about Mara (the tour's draft is a stub)."""
    model = sample_model()
    return ScriptedChatModel(responders={**model.responders, "ProfileDraft": mara_draft})


def write_sample_profile(profiles_dir: Path) -> Path:
    """Profile Mara Vell from the sample wiki into ``profiles_dir``; her ``profile.json``."""
    with (
        LoopbackWebServer(MediaWikiSite(saved_pages(SAMPLES / "wiki")).route) as wiki,
        override_models(mara_model()),
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


ANSWER = "The clockwork, mostly. It loses four minutes a week when the cold comes."
"""What the loopback model answers in character."""


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

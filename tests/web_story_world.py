"""The sample story prepared once for the web page's "character in time" views and reports.

The novel of ``examples/data`` imported and Mara's arcs built as ``docs/getting-started.md``
does (``import_novel``, ``build_arcs``), with the sample world's scripted model answering the
build; the BOOKMARKS storyline copied beside it. A module-scoped fixture calls
:func:`prepare_story` once, so each test file pays for one arc build (about a second).
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from pathlib import Path

from sample_world import SAMPLES, sample_model

from personae import ArcBuildContext, build_arcs, import_novel
from personae.testing import override_models

NOVEL = "the_keeper_of_gull_rock"
TITLE = "The Keeper of Gull Rock"
CHARACTER = "Mara"
AXES = ("Agency vs communion", "Mara and Elias")
"""Mara's axes as the sample model builds them (one intrapersonal, one with Elias)."""
PHASES = ("Phase 0", "Phase 1", "Phase 2")
"""Their phases: chapters 1-2, 3-4 and 5, described as ``Mara at MARK1/3/5``."""
ANSWER = "I keep the lamp lit, whatever Westmere offers."


@dataclass(frozen=True)
class Story:
    """Where the prepared sample story lives."""

    data_dir: Path
    """ARCANE's data folder: the imported novel with Mara's arcs."""
    storyline: Path
    """The BOOKMARKS storyline (gull_rock.jsonl) and its character list beside it."""


def prepare_story(root: Path) -> Story:
    """Import the sample novel, build Mara's arcs and copy the storyline under ``root``."""
    data_dir = root / "data"
    stories = root / "storylines"
    stories.mkdir(parents=True)
    for name in ("gull_rock.jsonl", "all_characters.json"):
        shutil.copy(SAMPLES / name, stories / name)
    context = ArcBuildContext(
        data_dir=str(data_dir), cache_dir=str(root / "cache"), model="openai:scripted"
    )
    with override_models(sample_model()):
        import_novel(SAMPLES / "gull_rock.txt", data_dir=data_dir, title=TITLE)
        asyncio.run(build_arcs(NOVEL, CHARACTER, context=context))
    return Story(data_dir, stories / "gull_rock.jsonl")

"""BOOKMARKS as a library call: a character's next action at a story position, grounded.

The CLI (``personae bookmarks act``) and apps call :func:`predict_action`; nothing here prints. The run
context (:class:`BookmarksContext`) names the storyline, the bank folder, the models, the
method and the embedding; what it leaves empty it takes from the settings.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.files import check_writable_dir
from personae.progress import Progress, quiet
from personae.run_lock import run_lock

if TYPE_CHECKING:
    from personae.graphs.bookmarks.graph import BookmarksContext
    from personae.memory.bookmarks.storyline import Storyline


@dataclass(frozen=True)
class ActionStep:
    """One BOOKMARKS step: the predicted action and the bookmarks that grounded it."""

    storyline: str
    """The storyline's name."""
    character: str
    position: int
    action: str
    """The predicted next action of ``character`` at ``position``."""
    bookmarks: list[dict[str, Any]]
    """The grounding bookmarks (id, type, question, answer, the position each is synced to)."""
    stats: dict[str, Any]
    """Reused, derived and new bookmarks; actions the sync read; LLM calls; degraded items."""
    warnings: list[str]
    """What the step could not do well (proposed questions dropped, ...), one line each."""
    resumed: bool = False
    """The step resumed an interrupted run of itself (its finished work was reused)."""
    output: dict[str, Any] = field(default_factory=dict)
    """The graph's whole output (``grounding`` included)."""


def check_step(storyline_path: str | Path, character: str, position: int) -> tuple[Any, str, int]:
    """The storyline, the character's name as it appears there, and the position, checked.

    Raises:
        InputError: the storyline is unreadable, the character never acts, or the position is
            out of range (one line each, naming the fix).
    """
    from personae.memory.bookmarks.storyline import open_storyline

    storyline = open_storyline(Path(storyline_path))
    return storyline, storyline.check_character(character), storyline.check_position(position)


async def predict_action(
    character: str,
    position: int,
    *,
    context: BookmarksContext,
    fresh: bool = False,
    wait: bool = True,
    progress: Progress = quiet,
) -> ActionStep:
    """Predict ``character``'s action at ``position`` of ``context.storyline_path`` (BOOKMARKS).

    The agent proposes questions, answers them from the bookmark bank (reusing, deriving or
    syncing bookmarks on demand, never reading ``position`` or later) and acts on the answers.
    With ``context.memory_dir`` the bank persists there and the step is checkpointed: a rerun
    of a killed step resumes it, paying only for the calls in flight (``fresh`` starts over).
    One step at a time per memory, whoever runs it (:mod:`personae.run_lock`): a second waits
    for the first, one ``progress`` line naming it, and then reuses the bookmarks it synced;
    with ``wait=False`` it raises :class:`~personae.errors.RunLockedError` instead.
    """
    from personae.graphs.bookmarks.graph import build_graph, step_warnings
    from personae.graphs.bookmarks.step_checkpoints import StepCheckpoints

    storyline, name, at = check_step(context.storyline_path, character, position)
    memory = Path(context.memory_dir) if context.memory_dir else None
    async with AsyncExitStack() as held:
        if memory is not None:
            check_writable_dir(memory, "--memory")
            what = f"a BOOKMARKS step on the memory {memory}"
            await held.enter_async_context(
                run_lock(memory, "act", what=what, wait=wait, progress=progress)
            )
        async with StepCheckpoints(memory, context.settings) as checkpoints:
            payload = {"character": name, "position": at}
            step = await checkpoints.invoke(build_graph(), payload, context, fresh=fresh)
    result: dict[str, Any] = step.output
    return ActionStep(
        storyline.name,
        name,
        at,
        str(result["action"]),
        list(result["bookmarks"]),
        dict(result["stats"]),
        step_warnings(result["stats"]),
        step.resumed,
        result,
    )


def scene_view(storyline: Storyline, character: str, position: int, size: int) -> dict[str, Any]:
    """The scene before ``position`` and, when ``character`` acts there, the true action.

    A benchmark storyline knows what the character really did next: showing it beside the
    prediction is how a user checks one step by eye (the agent never sees it).
    """
    truth = storyline.actions[position]
    after = [p for p in storyline.positions_of(character) if p >= position]
    return {
        "scene": [action.render() for action in storyline.scene(position, size)],
        "true_action": truth.text if truth.by(character) else None,
        "next_own_position": after[0] if after else None,
    }

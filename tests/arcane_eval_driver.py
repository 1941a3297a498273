"""Runs ``personae arcane eval`` in a fresh process with a scripted actor and judge.

``python arcane_eval_driver.py ARGS...``: every model is a :class:`ScriptedChatModel` that
answers role-play turns and both ARCANE judges; the CLI runs with ARGS. A fresh process is the
point: the first use of the novel's embedded Chroma store happens in this process, from
several worker threads at once, as it does for a user (an in-process test after the build
has it open already).
"""

from __future__ import annotations

import sys
from typing import Any

from personae import cli
from personae.testing import ScriptedChatModel, override_models, prompt_text


def actor(messages: Any) -> str:
    """A role-play answer naming the chapter it was asked about."""
    prompt = prompt_text(messages)
    if "Chapter: N" in prompt:
        return "Chapter: unknown"
    if "Presence: present" in prompt:
        return "Presence: present"
    return "Ada answers."


def main() -> None:
    """Override every model, then run the CLI with this process's arguments."""
    override_models(
        ScriptedChatModel(
            responders={
                "text": actor,
                "PhaseJudgement": lambda m: {"scores": {"apf": 70, "rpf": 60, "rae": 50}},
                "TrajectoryJudgement": lambda m: {
                    "scores": {"ptf_alignment": 40, "ptf_direction": 50, "ptf_shape": 60},
                    "average": 50.0,
                },
            }
        )
    )
    sys.argv = ["personae", *sys.argv[1:]]
    cli.run()


if __name__ == "__main__":
    main()

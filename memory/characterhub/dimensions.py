"""The seven profiling dimensions of CharacterHub: what a profile covers and a judge scores.

A domain module of its own because the planner, the summarizer, the rewriter (agents/), the
profile store (memory/), the profiler graph and the evaluation protocol (evals/) all use them,
and folders import downward only.
"""

from __future__ import annotations

from typing import Literal, get_args

Dimension = Literal[
    "identity", "appearance", "ability", "relationship", "experience", "personality", "other"
]
"""One profiling dimension, as schemas accept it (constrained decoding enforces the set)."""

DIMENSIONS: tuple[Dimension, ...] = get_args(Dimension)
"""The profiling dimensions of the paper, in report order."""

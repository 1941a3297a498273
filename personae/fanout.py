"""Fan-out that stops at the first failure: no sibling starts another model call after it.

``asyncio.gather`` lets the siblings of a failed task run on: a bookmarks step whose one batch
failed for good went on paying for 250 more calls. :func:`gather_all` runs the works in an
``asyncio.TaskGroup``, which cancels the others at the first exception (a task waiting for a
concurrency slot never starts its call), then raises that exception as itself, not wrapped in
an ``ExceptionGroup``, so the CLI still turns it into its one-line message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import Any, TypeVar, cast

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")


async def _await(work: Awaitable[T]) -> T:
    return await work


def first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first leaf exception of ``group`` (nested groups unwrapped)."""
    first = group.exceptions[0]
    return first_error(first) if isinstance(first, BaseExceptionGroup) else first


async def gather_all(works: Iterable[Awaitable[T]]) -> list[T]:
    """The results of ``works`` in order; the first failure cancels the rest and is raised."""
    tasks: list[asyncio.Task[T]] = []
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_await(work)) for work in works]
    except BaseExceptionGroup as failed:
        raise first_error(failed) from None
    return [task.result() for task in tasks]


async def gather_two(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """:func:`gather_all` of two works of different types, typed."""
    done: list[Any] = await gather_all([first, second])
    return cast(A, done[0]), cast(B, done[1])

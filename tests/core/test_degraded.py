"""Degraded items: the failure budget, the terminal line, the fan-out that stops, the fallback."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from personae.agents.answer_schemas import ask_in_batch_or_alone
from personae.degraded import FailureBudget, degraded_line
from personae.errors import InputError, RemoteError, TooManyFailuresError
from personae.fanout import gather_all
from personae.llm import InvalidAnswerError, LLMUsage


@pytest.mark.parametrize(
    ("text", "total", "limit"),
    [("10%", 100, 10), ("10%", 8, 1), ("10%", 0, 1), ("5", 3, 5), ("0", 9, 0), ("100%", 7, 7)],
)
def test_the_budget_is_a_count_or_a_share_of_at_least_one(
    text: str, total: int, limit: int
) -> None:
    assert FailureBudget(text).limit(total) == limit


def test_a_run_over_the_budget_stops_with_a_remote_error_and_a_bad_setting_is_input() -> None:
    FailureBudget("10%").check(1, 10, "bench instances")
    with pytest.raises(TooManyFailuresError, match="stopped: 2 of 10 bench instances") as error:
        FailureBudget("10%").check(2, 10, "bench instances")
    assert isinstance(error.value, RemoteError) and error.value.exit_code == 3
    for bad in ("ten", "-1", "120%", "%"):
        with pytest.raises(InputError, match="--max-failures"):
            FailureBudget(bad)


def test_the_line_gives_the_total_then_the_kinds() -> None:
    assert degraded_line(0, {"claims": 0}) is None
    assert degraded_line(3, {"b": 1, "a": 2, "c": 0}) == "degraded: 3 (a 2, b 1)"
    assert degraded_line(2) == "degraded: 2"


def invalid(schema: str = "X") -> InvalidAnswerError:
    return InvalidAnswerError(schema, 3, "1 validation error\n  Field required", LLMUsage(3))


def test_an_invalid_answer_error_is_a_one_line_remote_error_with_its_cost() -> None:
    error = invalid("ClaimChecks")
    assert isinstance(error, RemoteError) and "\n" not in str(error)
    assert str(error).startswith("the model gave malformed ClaimChecks output 3 times")
    assert error.usage.calls == 3


async def test_a_batch_still_invalid_is_asked_item_by_item() -> None:
    asked: list[list[int]] = []

    async def ask(keys: Sequence[int]) -> tuple[dict[int, str], LLMUsage]:
        asked.append(list(keys))
        if len(keys) > 1 or keys[0] == 2:
            raise invalid()
        return {keys[0]: "ok"}, LLMUsage(1)

    found, usage = await ask_in_batch_or_alone([1, 2, 3], ask)
    assert found == {1: "ok", 3: "ok"} and asked == [[1, 2, 3], [1], [2], [3]]
    assert usage.degraded == 1 and usage.calls == 3 + 1 + 3 + 1  # failed calls are paid too


async def test_the_first_failure_cancels_the_rest_and_is_raised_as_itself() -> None:
    finished: list[int] = []

    async def work(n: int) -> int:
        await asyncio.sleep(0 if n == 0 else 0.05)
        if n == 0:
            raise invalid()
        finished.append(n)
        return n

    with pytest.raises(InvalidAnswerError):  # not an ExceptionGroup: the CLI's one line
        await gather_all(work(n) for n in range(5))
    await asyncio.sleep(0.1)
    assert finished == []  # the siblings were cancelled, not left running
    assert await gather_all(asyncio.sleep(0, result=n) for n in range(3)) == [0, 1, 2]

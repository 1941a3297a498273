"""AsyncResources: what ``enter`` opened is closed on exit, in reverse, and on a failed entry."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import pytest

from personae.errors import RemoteError
from personae.loopback import LoopbackWebServer, WebRequest, WebResponse
from personae.resources import AsyncResources
from personae.server_runs import ServerRuns


class Held(AsyncResources):
    """Opens the named resources in order; ``fail_after`` raises once that many are open."""

    def __init__(self, names: list[str], log: list[str], fail_after: int | None = None) -> None:
        self.names, self.log, self.fail_after = names, log, fail_after
        self.opened: list[str] = []

    async def enter(self, stack: AsyncExitStack) -> None:
        for n, name in enumerate(self.names):
            if n == self.fail_after:
                raise ConnectionError(f"cannot open {name}")
            self.opened.append(await stack.enter_async_context(self.resource(name)))

    @asynccontextmanager
    async def resource(self, name: str) -> AsyncIterator[str]:
        self.log.append(f"open {name}")
        try:
            yield name
        except Exception as error:
            self.log.append(f"{name} saw {type(error).__name__}")
            raise
        finally:
            self.log.append(f"close {name}")


async def test_exit_closes_what_enter_opened_in_reverse() -> None:
    log: list[str] = []
    async with Held(["saver", "client"], log) as held:
        assert held.opened == ["saver", "client"]
        log.append("body")
    assert log == ["open saver", "open client", "body", "close client", "close saver"]


async def test_an_error_in_the_body_reaches_each_resource_and_propagates() -> None:
    log: list[str] = []
    with pytest.raises(KeyError):
        async with Held(["saver"], log):
            raise KeyError("x")
    assert log == ["open saver", "saver saw KeyError", "close saver"]


async def test_a_failed_entry_closes_what_it_had_opened() -> None:
    log: list[str] = []
    with pytest.raises(ConnectionError, match="cannot open client"):
        async with Held(["saver", "client"], log, fail_after=1):
            log.append("body")  # never runs
    assert log == ["open saver", "saver saw ConnectionError", "close saver"]


async def test_a_holder_can_be_entered_again_after_it_was_left() -> None:
    log: list[str] = []
    held = Held(["saver"], log)
    for _ in range(2):
        async with held:
            pass
    assert log == ["open saver", "close saver"] * 2


async def test_a_server_that_is_not_langgraph_is_one_error_and_leaves_no_client_open() -> None:
    asked: list[str] = []

    def not_langgraph(request: WebRequest) -> WebResponse:
        asked.append(request.path)
        return WebResponse(404, "no such page")

    with LoopbackWebServer(not_langgraph) as web:
        runs = ServerRuns(web.url, scope="test")
        with pytest.raises(RemoteError, match=f"server at {web.url} cannot be reached .*404"):
            async with runs:
                pass
    assert asked == ["/assistants/search"] and runs._client is None

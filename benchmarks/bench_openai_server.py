"""The extra time ``personae serve openai`` adds to one persona's turn over the runner's own.

Run: uv run python benchmarks/bench_openai_server.py [--turns 30] [--model-ms 0]

A persona (Iago's profile document, hashing embedding) is indexed in a temporary folder; the
model is the loopback OpenAI-compatible fake the tests use, answering every call of an AMADEUS
turn (the Guided Selection checks, the Attribute Extractor, the answer) after ``--model-ms``
of simulated thinking. Each turn carries two earlier messages, as a chat app sends them.

Prints the median and p90 wall time and the median CPU time of one turn: the runner alone
(``Chat.ask``, and ``Chat.stream`` read to its end, in this process: the model's own time plus
retrieval), through the server with the ``openai`` SDK (plain, and streamed to ``[DONE]``),
and the difference, plain against ``ask`` and streamed against ``stream``: what the server
adds (HTTP, JSON, the request's checks, the persona listing it resolves the name against, SSE
framing, the SDK client's own work).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import openai  # noqa: E402
from fake_openai import METHODS, FakeOpenAIChat  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from measure import load, percentile  # noqa: E402
from openai_world import CHARACTER, index_iago, responders  # noqa: E402
from web_world import serving  # noqa: E402

from personae.loopback import LoopbackWebServer  # noqa: E402
from personae.openai_api.app import create_app  # noqa: E402
from personae.openai_api.options import OpenAIServerOptions  # noqa: E402
from personae.runners.amadeus import open_chat  # noqa: E402

HISTORY = [("user", "Who set Roderigo on?"), ("assistant", "Not I.")]
QUESTION = "Be honest with me: what do you want?"
WAYS = (
    "runner alone (Chat.ask)",
    "runner alone (Chat.stream)",
    "server, openai SDK, plain",
    "server, openai SDK, streamed",
)


def slowed(respond: Callable[[Any], Any], seconds: float) -> Callable[[Any], Any]:
    def answer(messages: Any) -> Any:
        time.sleep(seconds)
        return respond(messages)

    return answer


Timing = tuple[list[float], list[float]]
"""Wall and CPU seconds of each turn."""


def measured(turn: Callable[[], object], timing: Timing) -> None:
    """Run one turn, adding its wall and CPU seconds to ``timing``."""
    start, used = time.perf_counter(), time.process_time()
    turn()
    timing[0].append(time.perf_counter() - start)
    timing[1].append(time.process_time() - used)


class RunnerTurns:
    """Turns through the runner in this process, on one event loop kept across turns."""

    def __init__(self, options: OpenAIServerOptions, loop: asyncio.Runner) -> None:
        self.context = options.amadeus_context()
        self.loop = loop
        self.history = [HumanMessage(HISTORY[0][1]), AIMessage(HISTORY[1][1])]

    def ask(self) -> None:
        self.loop.run(self._turn(stream=False))

    def stream(self) -> None:
        self.loop.run(self._turn(stream=True))

    async def _turn(self, *, stream: bool) -> None:
        async with open_chat(CHARACTER, context=self.context) as chat:
            if stream:
                async for _piece in chat.stream(QUESTION, history=self.history):
                    pass
            else:
                await chat.ask(QUESTION, history=self.history)


class ServerTurns:
    """Turns through the chat server with the ``openai`` SDK, as an app sends them."""

    def __init__(self, client: openai.OpenAI) -> None:
        self.client = client
        self.messages: list[Any] = [{"role": r, "content": c} for r, c in HISTORY]
        self.messages.append({"role": "user", "content": QUESTION})

    def plain(self) -> None:
        self.client.chat.completions.create(model=CHARACTER, messages=self.messages)

    def stream(self) -> None:
        chunks = self.client.chat.completions.create(
            model=CHARACTER, messages=self.messages, stream=True
        )
        for _chunk in chunks:
            pass


def line(label: str, timing: Timing) -> str:
    wall, cpu = timing
    median, p90 = 1000 * statistics.median(wall), 1000 * percentile(wall, 0.9)
    spent = 1000 * statistics.median(cpu)
    return f"{label:<30} wall median {median:6.1f} ms, p90 {p90:6.1f} ms; CPU {spent:5.1f} ms"


def added(label: str, alone: Timing, served: Timing) -> str:
    """The median of the paired differences (turn i through the server minus turn i alone)."""
    wall = statistics.median(s - a for s, a in zip(served[0], alone[0], strict=True))
    cpu = statistics.median(s - a for s, a in zip(served[1], alone[1], strict=True))
    share = 100 * wall / statistics.median(alone[0])
    return (
        f"server adds ({label}): {1000 * wall:+.1f} ms wall ({share:+.0f}% of the turn), "
        f"{1000 * cpu:+.1f} ms CPU (client, server and model share this process)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--model-ms", type=float, default=0.0, help="simulated time per call")
    args = parser.parse_args()
    answers = {name: slowed(r, args.model_ms / 1000) for name, r in responders().items()}
    fake = FakeOpenAIChat(answers, methods=METHODS)
    with tempfile.TemporaryDirectory() as tmp, LoopbackWebServer(fake) as model_server:
        os.environ.update(
            OPENAI_BASE_URL=f"{model_server.url}/v1",
            OPENAI_API_KEY="bench-key",
            PERSONAE_STRUCTURED_OUTPUT="json_schema",
        )
        index_iago(Path(tmp) / "personas")
        options = OpenAIServerOptions(
            personas_dir=Path(tmp) / "personas",
            data_dir=Path(tmp) / "data",
            models={"model": "openai:fake"},
        )
        ways: dict[str, Timing] = {name: ([], []) for name in WAYS}
        with serving(create_app(options)) as url, asyncio.Runner() as loop:
            runner = RunnerTurns(options, loop)
            server = ServerTurns(openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0))
            turns = dict(
                zip(WAYS, (runner.ask, runner.stream, server.plain, server.stream), strict=True)
            )
            for turn in turns.values():  # warm: imports, the Chroma client, the method probe
                turn()
            before = len(fake.requests)
            runner.ask()
            calls = len(fake.requests) - before
            for _ in range(args.turns):  # interleaved: load drifts alike for all four
                for name, turn in turns.items():
                    measured(turn, ways[name])
    print(f"one AMADEUS turn, {calls} model calls, {args.model_ms:g} ms each; {load()}")
    for name, timing in ways.items():
        print(line(name, timing))
    print(added("plain", ways[WAYS[0]], ways[WAYS[2]]))
    print(added("streamed", ways[WAYS[1]], ways[WAYS[3]]))


if __name__ == "__main__":
    main()

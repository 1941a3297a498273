"""The extra time ``personae serve openai`` adds to one persona's turn over the runner's own.

Run: uv run python benchmarks/bench_openai_server.py [--turns 30] [--model-ms 0]

A persona (Iago's profile document, hashing embedding) is indexed in a temporary folder; the
model is the loopback OpenAI-compatible fake the tests use, answering every call of an AMADEUS
turn (the Guided Selection checks, the Attribute Extractor, the answer) after ``--model-ms``
of simulated thinking. Each turn carries two earlier messages, as a chat app sends them.

Prints the median and p90 wall time of one turn: the runner alone (``Chat.ask`` in this
process: the model's own time plus retrieval), through the server with the ``openai`` SDK
(plain, and streamed to ``[DONE]``), and the difference: what the server adds (HTTP, JSON,
the request's checks, the model listing it resolves the name against, SSE framing).
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


def slowed(respond: Callable[[Any], Any], seconds: float) -> Callable[[Any], Any]:
    def answer(messages: Any) -> Any:
        time.sleep(seconds)
        return respond(messages)

    return answer


Timing = tuple[list[float], list[float]]
"""Wall and CPU seconds of each turn."""


def runner_turns(options: OpenAIServerOptions, turns: int) -> Timing:
    history = [HumanMessage(HISTORY[0][1]), AIMessage(HISTORY[1][1])]

    async def run() -> Timing:
        wall, cpu = [], []
        context = options.amadeus_context()
        for _ in range(turns):
            start, used = time.perf_counter(), time.process_time()
            async with open_chat(CHARACTER, context=context) as chat:
                await chat.ask(QUESTION, history=history)
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - used)
        return wall, cpu

    return asyncio.run(run())


def server_turns(client: openai.OpenAI, turns: int, *, stream: bool) -> Timing:
    messages: list[Any] = [{"role": r, "content": c} for r, c in HISTORY]
    messages.append({"role": "user", "content": QUESTION})
    wall, cpu = [], []
    for _ in range(turns):
        start, used = time.perf_counter(), time.process_time()
        if stream:
            for _chunk in client.chat.completions.create(
                model=CHARACTER, messages=messages, stream=True
            ):
                pass
        else:
            client.chat.completions.create(model=CHARACTER, messages=messages)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - used)
    return wall, cpu


def line(label: str, timing: Timing) -> str:
    wall, cpu = timing
    median, p90 = 1000 * statistics.median(wall), 1000 * percentile(wall, 0.9)
    spent = 1000 * statistics.median(cpu)
    return (
        f"{label:<30} wall median {median:6.1f} ms, p90 {p90:6.1f} ms; CPU median {spent:6.1f} ms"
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
        runner_turns(options, 3)  # warm: imports, the Chroma client, the method probe
        runner = runner_turns(options, args.turns)
        calls = len(fake.requests) // (args.turns + 3)
        with serving(create_app(options)) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
            server_turns(client, 3, stream=False)
            plain = server_turns(client, args.turns, stream=False)
            streamed = server_turns(client, args.turns, stream=True)
    print(f"one AMADEUS turn, {calls} model calls, {args.model_ms:g} ms each; {load()}")
    print(line("runner alone (Chat.ask)", runner))
    print(line("server, openai SDK, plain", plain))
    print(line("server, openai SDK, streamed", streamed))
    base_wall, base_cpu = (statistics.median(times) for times in runner)
    for label, (wall, cpu) in (("plain", plain), ("streamed", streamed)):
        extra, extra_cpu = statistics.median(wall) - base_wall, statistics.median(cpu) - base_cpu
        print(
            f"server adds ({label}): {1000 * extra:+.1f} ms wall "
            f"({100 * extra / base_wall:+.0f}% of the turn), {1000 * extra_cpu:+.1f} ms CPU "
            "(client, server and model in this one process)"
        )


if __name__ == "__main__":
    main()

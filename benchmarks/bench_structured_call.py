"""What one structured LLM call costs Personae's own code, against LangChain's include_raw chain.

Run: uv run python benchmarks/bench_structured_call.py [--calls 2000]

Every role of every paper asks for a structured answer (:func:`personae.llm.call_structured`).
``with_structured_output(schema, include_raw=True)`` wraps the model in a map, two passthrough
assigns and a fallback, whose sync lambdas and parser LangChain runs in worker threads when
awaited; :class:`personae.llm._StructuredCall` awaits the same bound model and runs its parser
inline. Both run here against a scripted model that answers at once (so the figures are the
framework's CPU, not a model's), sequentially and 8 at a time, over the same prompts; the CPU
per call is printed for each, with their ratio. The answers are checked to be equal.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from langchain_core.messages import HumanMessage
from measure import load
from pydantic import BaseModel, Field

from personae.llm import _structured
from personae.testing import ScriptedChatModel


class Verdict(BaseModel):
    """A judge's verdict on one claim."""

    reasoning: str = Field(description="why")
    score: int = Field(ge=1, le=5)


def model() -> ScriptedChatModel:
    return ScriptedChatModel(responders={"Verdict": lambda _: {"reasoning": "fits", "score": 4}})


async def run(runnable: Any, calls: int, width: int) -> tuple[float, list[Any]]:
    prompts = [
        [HumanMessage(f"Judge claim {i}: Haruhi founded the SOS Brigade.")] for i in range(calls)
    ]
    answers: list[Any] = []
    start = time.process_time()
    for first in range(0, calls, width):
        batch = prompts[first : first + width]
        results = await asyncio.gather(*(runnable.ainvoke(p) for p in batch))
        answers += [r["parsed"] for r in results]
    return (time.process_time() - start) * 1000 / calls, answers


async def main_async(calls: int) -> None:
    for width in (1, 8):
        chain = model().with_structured_output(Verdict, include_raw=True)
        lean = _structured(model(), Verdict)
        await run(chain, 50, width)  # warm both
        await run(lean, 50, width)
        theirs, their_answers = await run(chain, calls, width)
        mine, my_answers = await run(lean, calls, width)
        assert my_answers == their_answers
        print(
            f"structured call, {calls} calls {width} at a time: Personae's {mine:.2f} ms CPU per "
            f"call, LangChain's include_raw chain {theirs:.2f} ms ({theirs / mine:.2f}x); "
            f"answers equal; {load()}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    print("$ " + " ".join(["python", *sys.argv]))
    asyncio.run(main_async(args.calls))


if __name__ == "__main__":
    main()

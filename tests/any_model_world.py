"""Every main job on tiny inputs, for a model that follows the schema but is otherwise random.

Shared by the "valid but random" matrix test (``tests/test_any_model.py``) and the benchmark
``benchmarks/bench_any_model.py``. Each :class:`Job` prepares its input in a fresh folder (a
loopback wiki and Tavily for ``profile``, a storyline, a persona, the synthetic novel with a
fixture arc and probe) and names the CLI arguments; :func:`run_job` runs it in process with
:class:`~personae.testing.ScriptedChatModel` in random mode answering every model spec, and
returns the exit code, what was printed and the degraded items counted on the ``degraded:``
terminal line. Inputs are fixtures, never an earlier job's output, so each job meets the
random model on input that is valid.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from arcane_world import imported_novel, prepared_novel, write_event_stream
from bookmarks_world import write_storyline
from profile_eval_world import FIXTURE, write_profiles
from profiler_world import fake_web

from personae.cli import main
from personae.loopback import LoopbackWebServer
from personae.testing import ScriptedChatModel, override_models

MODEL = ["--model", "openai:random"]
DEGRADED_LINE = re.compile(r"\bdegraded: (\d+)")
"""The one terminal line every command prints when items degraded (their count first)."""

Prepare = Callable[[Path, ExitStack], list[str]]
"""Sets up a job's input under the folder (servers and variables on the stack); its argv."""


@dataclass(frozen=True)
class Job:
    """One CLI command on tiny fixture input."""

    name: str
    prepare: Prepare
    output: str = ""
    """The file a finished run writes (a glob under the folder); empty: what it prints."""


@dataclass(frozen=True)
class Outcome:
    """How a job ended under the random model."""

    exit_code: int
    out: str
    err: str
    degraded: int
    """Items the run degraded (its ``degraded:`` line; 0 without one)."""


@contextmanager
def _env(**values: str) -> Iterator[None]:
    import os

    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _profile(*extra: str) -> Prepare:
    def prepare(folder: Path, stack: ExitStack) -> list[str]:
        web, _, _ = fake_web()
        server = stack.enter_context(LoopbackWebServer(web.route))
        stack.enter_context(_env(TAVILY_API_KEY="tvly-test", TAVILY_BASE_URL=server.url))
        name = ["Kenshiro", "--franchise", "Fist of the North Star"]
        return ["profile", *name, "--wiki", server.url, "--out", str(folder), *extra, *MODEL]

    return prepare


def _profile_batch(folder: Path, stack: ExitStack) -> list[str]:
    argv = _profile()(folder, stack)
    wiki = argv[argv.index("--wiki") + 1]
    batch = folder / "characters.csv"
    rows = [f"{name},Fist of the North Star,{wiki}" for name in ("Kenshiro", "Raoh")]
    batch.write_text("name,franchise,wiki\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return ["profile", "--batch", str(batch), "--out", str(folder), *MODEL]


def _eval_profile(folder: Path, stack: ExitStack) -> list[str]:
    allowed, _ = write_profiles(folder)
    out = ["--out", str(folder / "report.json")]
    return ["characterhub", "eval", str(allowed), "--reference", str(FIXTURE), *out, *MODEL]


def _act(folder: Path, stack: ExitStack) -> list[str]:
    """A second step: the first one (at 32) left bookmarks for the matcher and the sync."""
    story = write_storyline(folder / "club.jsonl", size=60)
    argv = [
        "bookmarks",
        "act",
        str(story),
        "--character",
        "Haruhi",
        "--memory",
        str(folder / "mem"),
        *MODEL,
    ]
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        main([*argv, "--at", "32"])  # under the random model it may already degrade or fail
    return [*argv, "--at", "40"]


def _bench(method: str) -> Prepare:
    def prepare(folder: Path, stack: ExitStack) -> list[str]:
        story = write_storyline(folder / "club.jsonl", size=80)
        flags = ["--method", method, "--limit", "4", "--characters", "Haruhi", "Kyon"]
        return ["bookmarks", "bench", str(story), "--out", str(folder / "b"), *flags, *MODEL]

    return prepare


PERSONA = """# Iago

## Profile

I am Othello's ensign. I hate the Moor. I smile at those I despise.

## Deeds

### Act I

I set Roderigo on Brabantio. I tell Othello what he fears.
"""


def _persona(folder: Path) -> list[str]:
    path = folder / "iago.md"
    path.write_text(PERSONA, encoding="utf-8")
    return [str(path), "--character", "Iago", "--memory", str(folder / "mem")]


def _persona_index(folder: Path, stack: ExitStack) -> list[str]:
    return ["amadeus", "index", *_persona(folder)]


def _indexed(folder: Path) -> None:
    with redirect_stdout(io.StringIO()):
        if main(["amadeus", "index", *_persona(folder)]) != 0:
            raise RuntimeError("persona index failed while preparing the input")


def _chat(folder: Path, stack: ExitStack) -> list[str]:
    _indexed(folder)
    memory = ["--memory", str(folder / "mem")]
    return ["chat", "--character", "Iago", "--ask", "What do you want?", *memory, *MODEL]


HERMIONE = """# Hermione

## Profile

I am Hermione Granger. I study hard. I follow the rules until my friends need me.

Harry is my friend. Ron makes me laugh and angry.
"""


def _personality(folder: Path, stack: ExitStack) -> list[str]:
    path = folder / "hermione.md"
    path.write_text(HERMIONE, encoding="utf-8")
    who = ["--character", "Hermione", "--persona", f"Hermione={path}"]
    flags = ["--questionnaire", "mbti", "--limit", "2", *who]
    paths = ["--memory", str(folder / "mem"), "--out", str(folder / "out")]
    return ["amadeus", "eval-personality", *flags, *paths, *MODEL]


def _persona_qa(folder: Path, stack: ExitStack) -> list[str]:
    _indexed(folder)
    rows = [
        {"character": "Iago", "question": "What is your rank?", "answer": "Ensign."},
        {"character": "Iago", "question": "Whom do you hate?", "answer": "The Moor."},
    ]
    qa = folder / "qa.jsonl"
    qa.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    paths = ["--memory", str(folder / "mem"), "--out", str(folder / "out")]
    return ["amadeus", "eval-qa", str(qa), *paths, *MODEL]


def _arc_build(folder: Path, stack: ExitStack) -> list[str]:
    imported_novel(folder)
    book = ["the_river", "--character", "Ada", "--data", str(folder)]
    return ["arcane", "build-arcs", *book, "--yes", *MODEL]


def _arcane_prepare(folder: Path, stack: ExitStack) -> list[str]:
    imported_novel(folder)
    return ["arcane", "prepare", "the_river", "--data", str(folder), *MODEL]


def _arcane_act(folder: Path, stack: ExitStack) -> list[str]:
    prepared_novel(folder)
    scene = ["the_river", "Bram offers Ada a boat.", "--character", "Ada", "--chapter", "2"]
    return ["arcane", "act", *scene, "--data", str(folder), *MODEL]


def _probes_build(folder: Path, stack: ExitStack) -> list[str]:
    write_event_stream(prepared_novel(folder))
    return [
        "arcane",
        "build-probes",
        "the_river",
        "--types",
        "in_scenario",
        "--data",
        str(folder),
        *MODEL,
    ]


def _eval_arcane(folder: Path, stack: ExitStack) -> list[str]:
    prepared_novel(folder)
    paths = ["--data", str(folder), "--out", str(folder / "eval")]
    return ["arcane", "eval", "the_river", "--modes", "vanilla,arc", *paths, *MODEL]


def _eval_perturb(folder: Path, stack: ExitStack) -> list[str]:
    """Re-judging needs a finished evaluation: one is run first, on the same random model."""
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        if main(_eval_arcane(folder, stack)) != 0:
            raise RuntimeError("eval arcane failed while preparing arcane-perturb")
    return ["arcane", "eval-perturb", str(folder / "eval"), "--data", str(folder), *MODEL]


def _export_sft(folder: Path, stack: ExitStack) -> list[str]:
    prepared_novel(folder)
    out = ["--data", str(folder), "--out", str(folder / "sft.jsonl")]
    return [
        "arcane",
        "export",
        "the_river",
        "--format",
        "sft",
        "--teacher-model",
        "openai:random",
        *out,
    ]


PROFILE = "kenshiro--fist-of-the-north-star/profile.json"
NOVEL = "novels/the_river"
JOBS = (
    Job("profile", _profile(), PROFILE),
    Job("profile --method paper", _profile("--method", "paper"), PROFILE),
    Job("profile --batch", _profile_batch, "*/profile.json"),
    Job("eval profile", _eval_profile, "report.json"),
    Job("act", _act),
    Job("bench bookmarks (bookmarks)", _bench("bookmarks"), "b/summary.json"),
    Job("bench bookmarks (vanilla,ricl,eta)", _bench("vanilla,ricl,eta"), "b/summary.json"),
    Job("persona index", _persona_index, "mem/*"),
    Job("chat --ask", _chat),
    Job("eval personality", _personality, "out/summary.json"),
    Job("eval persona-qa", _persona_qa, "out/summary.json"),
    Job("arc build", _arc_build, f"{NOVEL}/arcs/ada.json"),
    Job("arcane prepare", _arcane_prepare, f"{NOVEL}/summaries.jsonl"),
    Job("arcane act", _arcane_act),
    Job("probes build", _probes_build, f"{NOVEL}/probes.jsonl"),
    Job("eval arcane", _eval_arcane, "eval/summary.json"),
    Job("eval arcane-perturb", _eval_perturb, "eval/perturb.json"),
    Job("export arcane (sft)", _export_sft, "sft.jsonl"),
)
"""Every CLI command that calls a model, on tiny inputs."""


def run_job(job: Job, folder: Path, seed: int, malformed: float = 0.0) -> Outcome:
    """Run ``job`` in ``folder`` with the random model of ``seed`` answering every spec.

    ``malformed``: the share of structured answers that ignore the schema (plain text).
    """
    out, err = io.StringIO(), io.StringIO()
    model = ScriptedChatModel(random_seed=seed, random_malformed=malformed)
    code = 2  # argparse exits 2 on a bad flag
    with ExitStack() as stack, override_models(model):
        argv = job.prepare(folder, stack)
        with redirect_stdout(out), redirect_stderr(err), contextlib.suppress(SystemExit):
            code = main(argv)
    printed = out.getvalue() + err.getvalue()
    found = DEGRADED_LINE.findall(printed)
    return Outcome(code, out.getvalue(), err.getvalue(), sum(int(n) for n in found))

"""CharacterHub's runner: profile one character, resuming its checkpoint, and write its folder.

The CLI (``personae profile``), the MCP ``profile_character`` tool and library users call
:func:`profile_character`; it runs the profiler graph on a checkpointer (``OUT/.checkpoints.sqlite``
unless one is given), resumes an interrupted run, and writes ``profile.json``, ``profile.md``
and ``card.json`` under ``OUT/<key>/``; with ``server`` the graph runs on a LangGraph server
instead and the files are written here the same way. A run that ends with nothing usable
keeps what was paid for: its unchecked draft in ``draft.json`` / ``draft.md``, and a checkpoint that a rerun with
the flag the error suggests (``--no-check-citations``: ``check_citations=False``) finishes
without asking any model again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.errors import NothingUsableError
from personae.runners import Progress, quiet

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from personae.agents.costs import Estimate
    from personae.graphs.characterhub.state import ProfilerContext
    from personae.memory.characterhub.profile_store import ProfilePaths
    from personae.server_runs import ServerRuns
    from personae.settings import Settings

CHECKPOINT_DB = ".checkpoints.sqlite"
"""The checkpoint file of a profiles folder (SQLite; see ``PERSONAE_CHECKPOINTER``)."""
_UNKEYED = ("cache_dir", "cache_ttl", "contact")
"""Context fields that do not change a run (where and how long pages are cached)."""
_PREFIX = "nothing usable left: "
PROMPT_TOKENS = 1_500
"""A profiler prompt without passages: instructions, schema, the character, notes or queries."""
ANSWER_TOKENS = 1_000
"""One structured answer: queries, notes, a coverage review, verdicts or a document."""
PROFILE_TOKENS = 4_000
"""What the rewrite reads besides its prompt (the round's notes) and about what it writes."""


@dataclass(frozen=True)
class Profile:
    """A finished profile: what ``profile.json`` holds and where the files are."""

    character: str
    """The name as resolved (the wiki page's title) or as given."""
    franchise: str | None
    profile: str
    """The first-person profile."""
    document: dict[str, Any]
    """The whole ``profile.json`` document (facts per dimension, sources, usage...)."""
    paths: ProfilePaths
    """``profile.json``, ``profile.md``, ``card.json`` and their folder."""
    resumed: bool = False
    """Written from a checkpoint (finished before, or an interrupted run resumed)."""
    notices: list[str] = field(default_factory=list)

    @property
    def usage(self) -> dict[str, int]:
        """Model calls, tokens, searches and the dropped/degraded counts of the run."""
        return dict(self.document.get("usage") or {})


def profile_thread(
    name: str,
    franchise: str | None,
    wiki: str | None,
    context: ProfilerContext,
    *,
    source: str | None = None,
) -> str:
    """Checkpoint thread of one profile: slug plus a hash of everything that changes the run.

    The character is its folder key (``profile_key``), not the name as typed: ``Shin``,
    ``shin `` and ``SHIN`` are one folder and one run, so a later run under another spelling
    resumes the finished one instead of paying again (the wiki comes in one spelling already,
    :func:`~personae.urls.same_site_url`). The context carries the model specs and their
    server, so changing a model starts a fresh run instead of resuming. ``source`` is a batch
    row's list (part of the key since batches began; kept so earlier checkpoints still resume).
    """
    from personae.memory.characterhub.profile_store import profile_key

    row = {"key": profile_key(name, franchise), "wiki": wiki, "source": source}
    return _thread_id(name, row, context)


def legacy_profile_thread(
    name: str,
    franchise: str | None,
    wiki: str | None,
    context: ProfilerContext,
    *,
    source: str | None = None,
) -> str:
    """The thread id earlier versions gave a profile: the name and franchise as typed.

    Read only, so that a checkpoint they saved (finished or interrupted) still resumes; see
    :func:`_stored_thread`.
    """
    row = {"name": name, "franchise": franchise, "wiki": wiki, "source": source}
    return _thread_id(name, row, context)


def _thread_id(name: str, row: Mapping[str, Any], context: ProfilerContext) -> str:
    """``<slug of name>-<10 hex digits>``: the hash of ``row`` and the keyed context fields."""
    from personae.memory.characterhub.profile_store import slugify

    run_options = {k: v for k, v in asdict(context).items() if k not in _UNKEYED}
    options = {"row": dict(row), "context": run_options}
    digest = hashlib.sha1(json.dumps(options, sort_keys=True, default=str).encode()).hexdigest()
    return f"{slugify(name)}-{digest[:10]}"


async def _stored_thread(
    saver: BaseCheckpointSaver[Any],
    name: str,
    franchise: str | None,
    wiki: str | None,
    context: ProfilerContext,
    source: str | None,
) -> str:
    """The thread of this profile in ``saver``: :func:`profile_thread`, or the legacy one.

    A checkpoint saved before threads were keyed by the folder key sits under
    :func:`legacy_profile_thread`; when the new thread has nothing and that one has a
    checkpoint, the run resumes it (two look-ups; no model call is paid again).
    """
    thread = profile_thread(name, franchise, wiki, context, source=source)
    legacy = legacy_profile_thread(name, franchise, wiki, context, source=source)
    if await _has_checkpoint(saver, thread) or not await _has_checkpoint(saver, legacy):
        return thread
    return legacy


async def _has_checkpoint(saver: BaseCheckpointSaver[Any], thread_id: str) -> bool:
    """Whether ``saver`` holds a checkpoint of ``thread_id`` (in the root namespace)."""
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    return await saver.aget_tuple(config) is not None


@asynccontextmanager
async def open_checkpoints(
    out_dir: Path, settings: Settings
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The one checkpointer of a profiles folder: ``OUT/.checkpoints.sqlite`` on one connection.

    A batch shares it between the characters it profiles at once; a connection per character
    would make concurrent writers of one SQLite file fail with "database is locked" whenever
    one waits longer than SQLite's busy timeout. With a Postgres ``PERSONAE_CHECKPOINTER`` the
    same threads live in that database (:mod:`personae.checkpointers`).
    """
    from personae.checkpointers import open_checkpointer

    out_dir.mkdir(parents=True, exist_ok=True)
    async with open_checkpointer(out_dir / CHECKPOINT_DB, settings) as saver:
        yield saver


def estimate_profile(context: ProfilerContext) -> Estimate:
    """At most how many model calls and tokens profiling one character costs with ``context``.

    Shown before a run starts (``personae profile``, the web page's confirm step). The calls
    follow the graph: ``planned`` plans once, then each of ``max_rounds`` rounds summarizes,
    checks the notes' citations (when ``check_citations``) and reflects on coverage, then
    rewrites and checks facts and prose; its LLM and token budgets cap the total, as they cap
    the run. ``paper`` runs R1 and R2 (R1 only at ``max_rounds=1``), each a search-agent call
    and a document, then the Table 8 rewrite. A call that reads passages reads at most
    ``evidence_chars`` of them; a round that stops early (coverage reached) costs less.
    """
    from personae.agents.costs import Estimate, text_tokens

    evidence = text_tokens("x" * context.evidence_chars) + PROMPT_TOKENS + ANSWER_TOKENS
    plain = PROMPT_TOKENS + ANSWER_TOKENS
    checks = 2 if context.check_citations else 0
    rewrite = PROMPT_TOKENS + 2 * PROFILE_TOKENS + checks * evidence
    capped = False
    if context.method == "paper":
        rounds = 1 if context.max_rounds == 1 else 2
        calls = 2 * rounds + 1 + checks
        tokens = rounds * (plain + evidence) + rewrite
        detail = "R1 and R2, a search call and a document each" if rounds == 2 else "R1"
    else:
        rounds = context.max_rounds
        per_round = 3 if context.check_citations else 2
        calls = 1 + rounds * per_round + 1 + checks
        tokens = plain + rounds * (evidence * (per_round - 1) + plain) + rewrite
        detail = f"a plan, up to {rounds} rounds of {per_round} calls"
        capped = calls > context.max_llm_calls or tokens > context.max_tokens
        calls = min(calls, context.max_llm_calls)
        tokens = min(tokens, context.max_tokens)
    detail += ", the rewrite" + (" and its 2 checks" if checks else "")
    if capped:
        detail += "; capped by the run's budget"
    return Estimate(calls, tokens, detail)


async def profile_character(
    name: str,
    *,
    franchise: str | None = None,
    wiki: str | None = None,
    out: Path | str = "profiles",
    context: ProfilerContext | None = None,
    force: bool = False,
    card_system_prompt: bool = False,
    progress: Progress = quiet,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    source: str | None = None,
    keep_checkpoints: bool = False,
    server: ServerRuns | str | None = None,
    wait: bool = True,
) -> Profile:
    """Profile ``name`` (of ``franchise``) into ``out/<key>/``, resuming its checkpoint.

    ``wiki`` pins the wiki (else it is discovered); ``context`` holds the run settings (models,
    method, budgets; default: the settings' defaults); ``force`` drops the character's
    checkpoints first. ``progress`` gets one line per telling step. Without ``checkpointer``
    the folder's own ``.checkpoints.sqlite`` is used. Once the files are written the run keeps
    only its last checkpoint (what a rerun reads) unless ``keep_checkpoints``.

    With ``server`` (a LangGraph server's URL, or a :class:`~personae.server_runs.ServerRuns`
    client a batch shares) the ``profiler`` graph runs there instead, in its own thread
    (:mod:`personae.server_runs`): a finished thread is read back, an interrupted one resumed
    from the server's checkpoint, ``force`` drops the thread first; the files are written
    here as an in-process run writes them.

    One run per character, whoever asks: the run holds the character's key (its folder's
    name, :func:`~personae.memory.characterhub.profile_store.profile_key`) in ``out``
    (:mod:`personae.run_lock`) for as long as it runs. A second run of that key waits, one
    ``progress`` line naming who holds it, and then returns the profile the first one wrote
    (no call paid twice) unless ``force``; with ``wait=False`` it raises instead.

    Raises:
        NothingUsableError: Nothing usable left; ``draft.json`` in the folder keeps what the
            run had (unchecked), and the message names the rerun that reuses it.
        RunLockedError: ``wait=False`` and another run profiles the character (exit 3).
        InputError, RemoteError: Bad input (exit 2) or a remote failure (exit 3).
    """
    from personae.memory.characterhub.profile_store import paths_for, profile_key
    from personae.run_lock import run_lock
    from personae.urls import same_site_url

    out_dir = Path(out)
    wiki = same_site_url(wiki) if wiki else wiki  # `/` or not, one run (one checkpoint)
    key = profile_key(name, franchise)
    paths = paths_for(out_dir, name, franchise)
    before = _written(paths.profile_json)
    say = progress or quiet
    async with run_lock(
        out_dir, key, what=f"the profile of {key}", wait=wait, progress=say
    ) as held:
        if held.waited and not force and _written(paths.profile_json) not in (None, before):
            say(f"{name}: reused the profile the run it waited for wrote ({paths.profile_json})")
            return read_profile(paths)
        return await _profile_unlocked(
            name, franchise, wiki, out_dir, context, force, card_system_prompt, say,
            checkpointer, source, keep_checkpoints, server,
        )  # fmt: skip


def _written(path: Path) -> tuple[int, int] | None:
    """When and as which file ``path`` was last written (None: not there)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_ino


def read_profile(paths: ProfilePaths, *, resumed: bool = True) -> Profile:
    """The finished profile in ``paths`` (its ``profile.json``), as a run returns it."""
    document = json.loads(paths.profile_json.read_text(encoding="utf-8"))
    return Profile(
        character=str(document["character"]),
        franchise=document.get("franchise"),
        profile=str(document["profile"]),
        document=document,
        paths=paths,
        resumed=resumed,
        notices=list(document.get("notices", [])),
    )


async def _profile_unlocked(
    name: str,
    franchise: str | None,
    wiki: str | None,
    out_dir: Path,
    context: ProfilerContext | None,
    force: bool,
    card_system_prompt: bool,
    progress: Progress,
    checkpointer: BaseCheckpointSaver[Any] | None,
    source: str | None,
    keep_checkpoints: bool,
    server: ServerRuns | str | None,
) -> Profile:
    """:func:`profile_character` once it holds the character's key."""
    from personae.graphs.characterhub.state import ProfilerContext

    run_context = context or ProfilerContext()
    if server is not None:
        return await _profile_on_server(
            name, franchise, wiki, out_dir, run_context, force, card_system_prompt,
            progress or quiet, server,
        )  # fmt: skip
    if checkpointer is None:
        async with open_checkpoints(out_dir, run_context.settings) as saver:
            return await _profile(
                name, franchise, wiki, out_dir, run_context, force, card_system_prompt,
                progress or quiet, saver, source, keep_checkpoints,
            )  # fmt: skip
    return await _profile(
        name, franchise, wiki, out_dir, run_context, force, card_system_prompt,
        progress or quiet, checkpointer, source, keep_checkpoints,
    )  # fmt: skip


async def _profile(
    name: str,
    franchise: str | None,
    wiki: str | None,
    out_dir: Path,
    context: ProfilerContext,
    force: bool,
    card_system_prompt: bool,
    progress: Progress,
    saver: BaseCheckpointSaver[Any],
    source: str | None,
    keep_checkpoints: bool = False,
) -> Profile:
    """Run or resume the graph on ``saver``, then write the files (or the draft)."""
    from personae.graphs.characterhub.profiler import build_graph
    from personae.graphs.characterhub.state import ProfileInput
    from personae.llm_endpoint import chosen_methods

    def say(line: str) -> None:
        progress(f"{name}: {line}")

    payload: ProfileInput | None = ProfileInput(name=name, franchise=franchise, wiki_url=wiki)
    if force:  # the thread under either id: a forced run starts from the input
        await saver.adelete_thread(profile_thread(name, franchise, wiki, context, source=source))
        await saver.adelete_thread(
            legacy_profile_thread(name, franchise, wiki, context, source=source)
        )
    thread = await _stored_thread(saver, name, franchise, wiki, context, source)
    config: Any = {"configurable": {"thread_id": thread}}
    app = build_graph(checkpointer=saver)
    snapshot = await app.aget_state(config)
    if not snapshot.values and not force:
        if await _reuse_checked_draft(app, saver, name, franchise, wiki, context, source, config):
            say("reusing the checked run's answers; its draft is kept as is (unchecked)")
            snapshot = await app.aget_state(config)
    # Finished means no task is left, not that a field is set or that ``next`` is empty: a run
    # stopped inside ``verify_profile`` already holds an unchecked draft in ``profile``, and
    # ``next`` leaves out tasks whose writes were saved before the checkpoint after them was
    # (Ctrl-C between the two): starting over then would add round 1 to the state twice.
    finished = bool(snapshot.values) and not snapshot.tasks
    if finished:
        say("already profiled; writing the files from the checkpoint")
    elif snapshot.tasks:
        payload = None
        say("resuming the interrupted run")
    if not finished:
        try:
            await _stream_run(app, payload, config, context, say)
        except NothingUsableError as error:
            values = (await app.aget_state(config)).values
            raise _kept_draft(error, values, out_dir, name, franchise, context) from error
    values = (await app.aget_state(config)).values
    profile = _write_files(
        {**values, "structured_output": chosen_methods()},
        out_dir, name, franchise, context, card_system_prompt, say,
        resumed=finished or payload is None,
    )  # fmt: skip
    if not keep_checkpoints:
        from personae.checkpointers import prune_finished

        await prune_finished(saver, config["configurable"]["thread_id"])
    return profile


def _write_files(
    values: Mapping[str, Any],
    out_dir: Path,
    name: str,
    franchise: str | None,
    context: ProfilerContext,
    card_system_prompt: bool,
    say: Progress,
    *,
    resumed: bool,
) -> Profile:
    """Write ``profile.json``, ``profile.md`` and ``card.json`` of a finished run's state.

    The one place both a run in this process and a server run end: the same files, the same
    lines about what was dropped or degraded.
    """
    from personae.memory.characterhub.profile_store import write_profile

    report_usage(values.get("usage", {}), say)
    paths = write_profile(
        out_dir,
        values,
        name=name,
        franchise=franchise,
        excluded_urls=context.exclude_urls,
        card_system_prompt=card_system_prompt,
    )
    return read_profile(paths, resumed=resumed)


def profile_server_runs(url: str, out: Path) -> ServerRuns:
    """The server client profiles into ``out`` share: its threads are scoped by the folder.

    One name and a batch into the same folder then find (and resume) each other's threads, as
    they share the folder's checkpoints in process.
    """
    from personae.server_runs import ServerRuns

    return ServerRuns(url, scope=f"profile:{Path(out).resolve()}")


async def _profile_on_server(
    name: str,
    franchise: str | None,
    wiki: str | None,
    out_dir: Path,
    context: ProfilerContext,
    force: bool,
    card_system_prompt: bool,
    progress: Progress,
    server: ServerRuns | str,
) -> Profile:
    """Run (or read back, or resume) the profiler in its thread on a LangGraph server.

    The context goes whole (``cache_dir`` made absolute: the server's working directory may
    differ); the state that comes back is written by :func:`_write_files`, as a local run's is.
    """
    from personae.server_runs import context_payload

    if isinstance(server, str):
        async with profile_server_runs(server, out_dir) as runs:
            return await _profile_on_server(
                name, franchise, wiki, out_dir, context, force, card_system_prompt, progress, runs
            )

    def say(line: str) -> None:
        progress(f"{name}: {line}")

    fields = context_payload(context)
    if fields.get("cache_dir"):  # the server's working directory may differ
        fields["cache_dir"] = str(Path(fields["cache_dir"]).resolve())
    from personae.memory.characterhub.profile_store import profile_key

    payload: dict[str, Any] = {"name": name, "franchise": franchise, "wiki_url": wiki}
    unit = {"key": profile_key(name, franchise), "wiki_url": wiki}  # one thread per spelling
    say(f"running on {server.url}")
    run = await server.run("profiler", payload, fields, fresh=force, unit=unit)
    if run.reused:
        say("already profiled on the server; writing the files")
    elif run.resumed:
        say("resumed the interrupted server run")
    return _write_files(
        run.values, out_dir, name, franchise, context, card_system_prompt, say,
        resumed=run.reused or run.resumed,
    )  # fmt: skip


async def _reuse_checked_draft(
    app: Any,
    saver: BaseCheckpointSaver[Any],
    name: str,
    franchise: str | None,
    wiki: str | None,
    context: ProfilerContext,
    source: str | None,
    config: Any,
) -> bool:
    """Start an unchecked run from the checked run that stopped at its check, if there is one.

    The error of a checked run that kept nothing suggests ``--no-check-citations``; that
    changes the run's key, so without this the rerun would pay every model call again. The
    checked run's state (its rounds, notes and draft, all paid for) is copied into the new
    thread just before ``verify_profile``, which then keeps the draft as is: no model call.
    The checked thread is left as it was.
    """
    if context.check_citations:
        return False
    checks = replace(context, check_citations=True)
    checked = {
        "configurable": {
            "thread_id": await _stored_thread(saver, name, franchise, wiki, checks, source)
        }
    }
    before = await app.aget_state(checked)
    if [t.name for t in before.tasks] != ["verify_profile"] or "profile" not in before.values:
        return False
    rewrite = (
        "rewrite_paper_profile" if before.values.get("method") == "paper" else "rewrite_profile"
    )
    await app.aupdate_state(config, dict(before.values), as_node=rewrite)
    return True


def _kept_draft(
    error: NothingUsableError,
    values: Mapping[str, Any],
    out_dir: Path,
    name: str,
    franchise: str | None,
    context: ProfilerContext,
) -> NothingUsableError:
    """Write the run's unchecked draft (when it has anything) and say where, in the error."""
    from personae.memory.characterhub.profile_store import write_draft

    if not (values.get("profile") or values.get("sources")):
        return error
    problem = error.problem.removeprefix(_PREFIX)
    path = write_draft(
        out_dir,
        values,
        name=name,
        franchise=franchise,
        reason=problem,
        excluded_urls=context.exclude_urls,
    )
    return NothingUsableError(f"{problem} (the unchecked draft is kept in {path})", error.fix)


async def _stream_run(
    app: Any, payload: Any, config: Any, context: ProfilerContext, progress: Progress
) -> None:
    """Run (or resume) the graph, printing one line per telling update and each notice once."""
    shown: set[str] = set()
    async for chunk in app.astream(payload, config, context=context, stream_mode="updates"):
        for node, update in chunk.items():
            line = describe(node, update, bool(context.check_citations))
            if line:
                progress(line)
            for notice in notices_of(update):
                if notice not in shown:  # several searches may skip the same page
                    shown.add(notice)
                    progress(f"notice: {notice}")


def describe(node: str, update: Any, checks: bool = True) -> str | None:
    """One progress line for a node's update (``None`` for quiet nodes).

    ``checks``: whether the citation checks run after the rewrite, so the line says what happens.
    """
    if not isinstance(update, dict):
        return None
    if node == "resolve_character":
        read = len(update.get("evidence", []))
        found = f"found {update.get('wiki_page') or 'no wiki page'}"
        return f"{found} ({read} passages of it read)" if read else found
    if node == "plan_queries":
        return f"planned {len(update.get('pending', []))} queries"
    if node == "summarize_evidence" and update.get("rounds"):
        record = update["rounds"][0]
        return (
            f"round {record['round']}: {record['results']} passages, "
            f"{len(record['new_source_ids'])} new sources, {len(record['notes'])} notes"
        )
    if node == "check_stop_rules" and update.get("stop_reason"):
        return f"stopped: {update['stop_reason']}"
    if node == "write_paper_document" and update.get("documents"):
        record = update["rounds"][0]
        return (
            f"R{record['round']}: {record['results']} passages, "
            f"{len(record['new_source_ids'])} new sources, document written"
        )
    if node in ("rewrite_profile", "rewrite_paper_profile") and update.get("profile"):
        if checks:
            return "profile drafted; checking its facts and sentences against the sources"
        if node == "rewrite_paper_profile":
            return "profile drafted (Table 8 over DRInfo), kept as written: nothing checks it"
        return "profile drafted, kept as written (--no-check-citations)"
    if node == "verify_profile":
        if update.get("prose_check") is None:
            return None  # --no-check-citations: nothing was checked, so nothing to report
        usage = update.get("usage", {})
        return (
            f"citation check: {usage.get('facts_unsupported', 0)} facts and "
            f"{usage.get('sentences_unsupported', 0)} sentences dropped"
        )
    return None


def notices_of(update: Any) -> list[str]:
    """The notices a node's update adds (failed searches, web disabled, no wiki page...)."""
    notices = update.get("notices") if isinstance(update, dict) else None
    return [str(n) for n in notices or []]


def report_usage(usage: Mapping[str, int], progress: Progress) -> None:
    """One line each for dropped model output, dropped search results and degraded items."""
    from personae.degraded import degraded_line
    from personae.memory.characterhub.profile_store import (
        DEGRADED_KINDS,
        DROPPED_RESULTS,
        dropped_output,
    )

    dropped = dropped_output(usage)
    if dropped:
        progress(f"dropped model output: {'; '.join(dropped)}")
    if usage.get("results_dropped"):
        progress(f"{usage['results_dropped']} {DROPPED_RESULTS}")
    degraded = degraded_line(usage.get("degraded", 0), {k: usage.get(k, 0) for k in DEGRADED_KINDS})
    if degraded:
        progress(degraded)

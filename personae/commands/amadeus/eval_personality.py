"""`personae amadeus eval-personality`: the AMADEUS interview-based MBTI / BFI evaluation (Tables 4-5).

Each character is interviewed with every item of the questionnaire (a fresh conversation per
item) by the chosen role-play method, the answers are assessed with InCharacter's protocol and
the predicted type is compared with the personality-database label. Results land in
``--out``: ``results.jsonl`` (a rerun skips what is done), ``summary.json``, ``report.md``.

A character needs a persona index: ``--persona NAME=SOURCE`` builds one from a profile.json
(``personae profile``), a wiki page, a Markdown file or a CoSER book, and the report records
which source each persona came from; otherwise an index made with ``personae amadeus index``
under ``--memory`` is used (looked up by the character's name and its InCharacter aliases).

The flags fill the AMADEUS run context, which takes the rest from the settings: the models
(:mod:`personae.commands.models`; the rater is the judge model), ``CHROMA_HOST`` /
``CHROMA_PORT``, ``PERSONAE_EMBEDDINGS``, ``PERSONAE_CACHE_DIR`` (wiki fetches).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.degraded import add_max_failures_flag, print_degraded
from personae.errors import InputError

PERSONA_FIX = (
    "build a persona: personae profile 'NAME' and pass --persona NAME=profiles/<name>/profile.json "
    "(or a wiki page URL/.html, a Markdown file, a CoSER book), or index one with "
    "personae amadeus index"
)


def register(commands: Any) -> None:
    """Add ``amadeus eval-personality``."""
    from personae.commands.amadeus.chat import add_selection_model_flags
    from personae.commands.amadeus.persona import add_index_flags
    from personae.commands.models import add_model_flags

    parser = commands.add_parser(
        "eval-personality", help="interview characters with MBTI/BFI items (AMADEUS Tables 4-5)"
    )
    parser.add_argument("--questionnaire", required=True, help="mbti, bfi, or a questionnaire JSON")
    parser.add_argument("--character", nargs="+", required=True, help="characters to interview")
    parser.add_argument(
        "--labels", help="pdb (default), annotation, or a label JSON file ({name: {BFI: 'SCOEN'}})"
    )
    parser.add_argument(
        "--persona",
        action="append",
        default=[],
        metavar="NAME=SOURCE",
        help="persona source of a character (profile.json, wiki URL/.html, .md, CoSER book)",
    )
    parser.add_argument(
        "--method", choices=("amadeus", "naive", "none"), default="amadeus", help="role-play method"
    )
    parser.add_argument(
        "--assess",
        choices=("er", "er-personae", "oc"),
        default="er",
        help="er: InCharacter's expert rating, its prompts (the paper's); er-personae: expert "
        "rating, our prompts; oc: option conversion, our prompts",
    )
    parser.add_argument("--out", type=Path, default=Path("runs/personality"), help="results folder")
    parser.add_argument(
        "--data", type=Path, help="an InCharacter data folder instead of the shipped one"
    )
    parser.add_argument("--language", choices=("en", "zh"), default="en", help="interview language")
    parser.add_argument("--limit", type=int, help="items per dimension (quick runs)")
    parser.add_argument("--concurrency", type=int, default=4, help="model calls at once")
    parser.add_argument("--gs-wave", type=int, default=1, help="Guided Selection checks at once")
    parser.add_argument(
        "--hs", action="store_true", help="also judge each answer's Hallucination Score (Table 6)"
    )
    add_max_failures_flag(parser, "assessments")
    add_selection_model_flags(parser)
    add_index_flags(parser)
    add_model_flags(parser, judge=True)
    parser.set_defaults(handler=run)


def _personas(pairs: list[str]) -> dict[str, str]:
    found = {}
    for pair in pairs:
        name, sep, source = pair.partition("=")
        if not sep or not name.strip() or not source.strip():
            raise InputError(
                f"--persona {pair!r} is not NAME=SOURCE", "write --persona Iago=othello.json"
            )
        found[name.strip().casefold()] = source.strip()
    return found


def _existing_index(names: list[str], options: Any) -> Any:
    from personae.runners.amadeus import open_indexed_persona

    for candidate in names:
        try:
            return open_indexed_persona(candidate, options)
        except InputError as error:
            if "mismatch" in str(error):
                raise
    return None


def resolve_interviewees(
    args: argparse.Namespace, questionnaire: Any, options: Any, store: Any
) -> list[Any]:
    """Each ``--character`` with its label, persona index (built from ``--persona``) and source."""
    import asyncio

    from personae.evals.amadeus.personality_data import find_character, load_characters, load_labels
    from personae.evals.amadeus.personality_eval import Interviewee
    from personae.runners.amadeus import index_persona

    characters = load_characters(args.data)
    labels = load_labels(args.labels, questionnaire, data=args.data)
    personas = _personas(args.persona)
    found = []
    for name in args.character:
        known = find_character(name, characters)
        key = known.id if known else name
        label = labels.get(key) or labels.get(name)
        if label is None and args.labels not in (None, "pdb", "annotation"):
            raise InputError(
                f"the label file {args.labels} has no {questionnaire.kind} label for {name}",
                "add it or drop the character",
            )
        aliases = [name, *(known.aliases if known else ())]
        source = next((personas[a.casefold()] for a in aliases if a.casefold() in personas), None)
        if source is not None:
            done = asyncio.run(index_persona(source, character=name, index=options, context=store))
            indexed, source_text, kind = done.character, done.source, done.source_kind
        else:
            index = _existing_index(aliases, options)
            if index is None:
                raise InputError(f"no persona for {name} under {options.memory_dir}", PERSONA_FIX)
            manifest = index.manifest
            indexed, source_text, kind = (
                index.character,
                str(manifest.get("source", "")),
                str(manifest.get("source_kind", "")),
            )
        found.append(
            Interviewee(
                name=key,
                indexed_as=indexed,
                aliases=tuple(aliases),
                experimenter=known.experimenter if known else "Interviewer",
                label=label,
                persona_source=source_text,
                persona_kind=kind,
            )
        )
    return found


def _progress(line: str) -> None:
    sys.stderr.write(f"• {line}\n")


def announce_cost(
    args: argparse.Namespace,
    questionnaire: Any,
    characters: int,
    method: str,
    models: Any,
    judge: str,
) -> None:
    """Print the estimated calls and tokens, and the models that will be paid, before a call."""
    from personae.agents.costs import estimate_line
    from personae.evals.amadeus.costs import estimate_personality

    estimate = estimate_personality(
        questionnaire, characters, method=method, assess=args.assess, limit=args.limit, hs=args.hs
    )
    gs = models.gs_model or models.model
    named = {
        "model": models.cache_name(models.model),
        "guided selection": models.cache_name(gs),
        "attribute extractor": models.cache_name(models.ae_model or gs),
        "rater and judge": models.cache_name(judge),
    }
    sys.stderr.write(estimate_line(estimate, named))


def run(args: argparse.Namespace) -> int:
    """Resolve questionnaire, characters and models; run; print the report."""
    import asyncio

    from personae.commands.amadeus.chat import agent_context
    from personae.commands.amadeus.persona import index_options
    from personae.evals.amadeus.paper_settings import personality_settings
    from personae.evals.amadeus.personality_data import load_questionnaire
    from personae.evals.amadeus.personality_eval import PersonalityRun, run_personality_eval
    from personae.evals.paper_settings import settings_text

    if args.concurrency < 1 or (args.limit is not None and args.limit < 1):
        raise InputError("--concurrency and --limit must be at least 1", "pass 1 or more")
    questionnaire = load_questionnaire(args.questionnaire, data=args.data, language=args.language)
    agent = agent_context(args)
    judge = agent.judge_spec(args.judge_model or "")
    rater = agent.chat_model(judge, "judge")  # a bad judge spec fails before any work
    options = index_options(args, agent)
    interviewees = resolve_interviewees(args, questionnaire, options, agent)
    announce_cost(args, questionnaire, len(interviewees), agent.method, agent, judge)
    settings = personality_settings(
        agent,
        questionnaire=questionnaire.name,
        items=sum(
            len(questionnaire.by_dimension(d)[: args.limit]) for d in questionnaire.dimensions
        ),
        characters=len(interviewees),
        assess=args.assess,
        rater=agent.cache_name(judge),
    )
    sys.stderr.write(settings_text("AMADEUS Tables 4-5", settings))
    summary = asyncio.run(
        run_personality_eval(
            PersonalityRun(
                questionnaire=questionnaire,
                interviewees=interviewees,
                agent=agent,
                rater=rater,
                assess=args.assess,
                out_dir=args.out,
                concurrency=args.concurrency,
                limit=args.limit,
                progress=_progress,
                hs_judge=rater if args.hs else None,
                judge_name=agent.cache_name(judge),
                cache_dir=agent.settings.cache_dir / "judge",
                max_failures=args.max_failures,
                settings=settings,
                language=args.language,
            )
        )
    )
    from personae.evals.amadeus.personality_eval import render_report

    sys.stdout.write(render_report(summary))
    sys.stdout.write(f"results: {args.out}/\n")
    degraded = summary["degraded"]["assessments"]
    print_degraded(degraded, {"assessments": degraded})
    return 0

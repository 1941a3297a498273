"""The ``personae`` console script: parses arguments and turns errors into one-line messages."""

from __future__ import annotations

import argparse
import ast
import functools
import logging
import re
import signal
import sys
import threading
import warnings
from collections.abc import Sequence
from typing import Any

from personae import __version__
from personae.commands import aliases, tree, typos
from personae.commands.models import check_model_flags, name_models_alike
from personae.errors import PersonaeError
from personae.urls import check_url_flags


class _Parser(argparse.ArgumentParser):
    """argparse with our exit code and one-line error style (no usage block).

    An unknown command gets "did you mean" over the commands of its level (the ones
    ``--help`` lists first, then the old spellings); every message says which ``--help`` to
    read.
    """

    def error(self, message: str) -> None:  # type: ignore[override]
        chosen = re.fullmatch(r"argument (.+?): invalid choice: (.+?) \(choose from .*\)", message)
        if chosen:
            message = _invalid_choice(self, chosen[1], str(ast.literal_eval(chosen[2])))
        self.exit(2, f"personae: error: {message} (see '{self.prog} --help')\n")


def _invalid_choice(parser: argparse.ArgumentParser, name: str, word: str) -> str:
    """The message for ``word`` where argument ``name`` takes one of a few words."""
    action = next(a for a in parser._actions if a.choices and argparse._get_action_name(a) == name)
    if isinstance(action, argparse._SubParsersAction):
        shown = tree.visible_commands(parser)
        hidden = [command for command in action.choices if command not in shown]
        return f"unknown command '{word}'" + (
            typos.suggest(word, shown, hidden) or f"; the commands: {', '.join(shown)}"
        )
    choices = [str(choice) for choice in action.choices]  # type: ignore[union-attr]
    return f"argument {name}: invalid choice '{word}'" + (
        typos.suggest(word, choices) or f"; choose from {', '.join(choices)}"
    )


def build_parser() -> argparse.ArgumentParser:
    """The full parser: the command tree (:mod:`~personae.commands.tree`) and the old spellings.

    Command modules import only the standard library at their top level (heavy libraries are
    imported inside each handler), so ``--help``, ``--version`` and argument errors answer
    without loading LangGraph, Chroma or OpenAI.
    """
    parser = _Parser(
        prog="personae",
        description="Role-playing agents on LangGraph: the everyday verbs first, then one "
        "group per paper (personae GROUP --help lists its commands).",
        epilog="Model flags: --model (strong), --fast-model, --judge-model wherever the role "
        "exists; a paper's own role keeps the paper's name (--gs-model, --critic-model, ...). "
        "The spellings from before the groups still run for one release, each with one line "
        "naming the new one. Short forms: 'personae web' and "
        "'personae mcp' are 'personae serve web' and 'personae serve mcp'.",
    )
    parser.add_argument("--version", action="version", version=f"personae {__version__}")
    _add_verbose(parser, argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    tree.add_commands(commands)
    aliases.add_old_spellings(parser)
    for command in _every_subparser(parser):
        _add_verbose(command, argparse.SUPPRESS)
        name_models_alike(command)
    return parser


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The parser, built at the first :func:`main` of the process and kept.

    Why: building it adds ~15,000 arguments (15 ms of CPU) and an embedding program or a test
    suite calls :func:`main` hundreds of times. It holds no settings (defaults are read from
    the environment by each handler, at the edge) and parsing never changes it.
    """
    return build_parser()


VERBOSE_HELP = "show what Personae logs: errors it recovered from, skipped records (-vv: more)"


def _add_verbose(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("-v", "--verbose", action="count", default=default, help=VERBOSE_HELP)


def _every_subparser(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every (sub)command parser below ``parser``, each once, so ``-v`` works after any name.

    A command reached by its old and its new spelling is one parser: it gets ``-v`` once.
    """
    found: dict[int, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                for below in (child, *_every_subparser(child)):
                    found.setdefault(id(below), below)
    return list(found.values())


def _configure_logging(verbosity: int) -> None:
    """``-v``: Personae's INFO records on stderr; ``-vv``: DEBUG too. Quiet otherwise."""
    if verbosity <= 0:
        return
    import logging

    logger = logging.getLogger("personae")
    for old in [h for h in logger.handlers if h.get_name() == "personae-cli"]:
        logger.removeHandler(old)  # main() called again in one process (tests, embedding)
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name("personae-cli")
    handler.setFormatter(logging.Formatter("personae: %(levelname)s: %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbosity == 1 else logging.DEBUG)


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record comes (tests swap it per test)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def _show_notices() -> None:
    """Print what the ``personae.notices`` logger says (a prompt cut to fit the model's window).

    Notices are things a user must know while the run goes on; library users see them only
    when they configure logging.
    """
    logger = logging.getLogger("personae.notices")
    for old in [h for h in logger.handlers if h.get_name() == "personae-notices"]:
        logger.removeHandler(old)  # main() called again in one process (tests, embedding)
    handler = _CurrentStderr()
    handler.set_name("personae-notices")
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("personae: notice: %(message)s"))
    logger.addHandler(handler)


INTERRUPTED = "personae: interrupted; rerun the same command to resume"
"""The one line a Ctrl-C ends with (also :data:`personae.console.INTERRUPTED`)."""


def _quiet_late_thread_results(hook: Any) -> Any:
    """A ``threading.excepthook`` that drops "Event loop is closed" from worker threads.

    After Ctrl-C the event loop closes while worker threads (aiosqlite's, for checkpoints) may
    still finish a call and try to hand the result back; that is expected on the way out and
    must not print a traceback. Every other thread error goes to ``hook``.
    """

    def filtered(args: threading.ExceptHookArgs) -> None:
        if isinstance(args.exc_value, RuntimeError) and "Event loop is closed" in str(
            args.exc_value
        ):
            return
        hook(args)

    return filtered


def _python_handles_ctrl_c() -> None:
    """Python's own Ctrl-C handler again, now that ``main`` catches ``KeyboardInterrupt``.

    The console script (:mod:`personae.console`) loads the CLI under a handler that exits at
    once; from here on an interrupt must unwind (checkpoints commit, files close).
    """
    handler = signal.getsignal(signal.SIGINT)
    if getattr(handler, "__module__", None) == "personae.console":  # not imported here: a cycle
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _unknown_arguments(parser: argparse.ArgumentParser, argv: list[str], extras: list[str]) -> None:
    """One line for words no parser took: "did you mean" over the flags of that command.

    Called before parsing too (``extras`` empty): a mistyped required flag (``--charcter``)
    is then named as the typo it is, not as the missing ``--character`` argparse would report.
    """
    _path, command = tree.command_path(parser, argv)
    flag = typos.unknown_flag(command, argv) if not extras else None
    if flag is None and extras:
        flag = next((word.split("=", 1)[0] for word in extras if word.startswith("-")), None)
        if flag is None:
            command.error(f"unexpected argument{'s' * (len(extras) > 1)}: {' '.join(extras)}")
    if flag is not None:
        command.error(f"unknown flag {flag}" + typos.suggest(flag, typos.visible_flags(command)))


def _one_line_deprecations(show: Any) -> Any:
    """A ``warnings.showwarning`` printing an old spelling's note as one line.

    A :class:`~personae.commands.aliases.DeprecatedSpelling` becomes ``personae: deprecated: ...``
    on stderr (Python's own format takes two lines); every other warning goes to ``show``.
    Installed by the console script only: a program that calls :func:`main` keeps its own
    display and Python's filters (which hide a deprecation unless asked).
    """

    def shown(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        if issubclass(category, aliases.DeprecatedSpelling):
            print(f"personae: deprecated: {message}", file=sys.stderr)
        else:
            show(message, category, *args, **kwargs)

    return shown


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (0 ok, 2 bad input/config, 3 remote, 130 Ctrl-C).

    Ctrl-C anywhere (while the command's libraries load, or mid-run) ends with one line: the
    checkpoints written so far are committed, so rerunning resumes.
    """
    try:
        _python_handles_ctrl_c()
        argv = list(sys.argv[1:] if argv is None else argv)
        parser = _parser()
        for note in aliases.deprecations(parser, argv):
            warnings.warn(note, aliases.DeprecatedSpelling, stacklevel=1)
        _unknown_arguments(parser, argv, [])
        args, extras = parser.parse_known_args(argv)
        if extras:
            _unknown_arguments(parser, argv, extras)
        _configure_logging(getattr(args, "verbose", 0))
        _show_notices()
        check_model_flags(args)  # before the handler's heavy imports
        check_url_flags(args)
        return int(args.handler(args) or 0)
    except PersonaeError as error:
        print(f"personae: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130


def run() -> None:
    """Console-script entry point (kept quiet about worker threads outliving a Ctrl-C)."""
    threading.excepthook = _quiet_late_thread_results(threading.excepthook)
    warnings.showwarning = _one_line_deprecations(warnings.showwarning)
    warnings.simplefilter("always", aliases.DeprecatedSpelling)  # shown: a person reads this
    sys.exit(main())


if __name__ == "__main__":
    run()

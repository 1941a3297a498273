"""The command tree: at most 8 commands in ``--help``, one group per paper folder, old spellings kept.

Every command is registered under its real name by a module in its paper's folder; an old
spelling (the alias table) parses to the very parser its new one does (so a flag a command module
adds shows up under both), runs, and warns once naming the new spelling; an unknown command or
flag is one line with "did you mean", exit 2, no usage block.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from bookmarks_world import write_storyline
from cli_errors import assert_one_line_error

import personae.commands
from personae import cli
from personae.cli import build_parser, main
from personae.commands import aliases, tree, typos

OLD_TOP = sorted({old[0] for old in aliases.OLD_PATHS})


def help_commands(parser: argparse.ArgumentParser) -> list[str]:
    """The command names a ``--help`` page lists (its positional section)."""
    text = parser.format_help()
    section = text.split("positional arguments:\n  COMMAND\n", 1)[1].split("\n\n", 1)[0]
    return [
        line.split()[0]
        for line in section.splitlines()
        if line.startswith("    ") and line[4] != " "
    ]


def test_help_lists_the_everyday_verbs_then_one_group_per_paper() -> None:
    root = build_parser()
    papers = sorted(
        p.parent.name for p in Path(personae.commands.__file__).parent.glob("*/__init__.py")
    )
    assert sorted(tree.paper_names()) == papers and len(papers) == 4
    assert help_commands(root) == ["profile", "chat", "doctor", "serve", *tree.paper_names()]
    assert len(help_commands(root)) <= 8
    assert not set(OLD_TOP) & set(help_commands(root))
    assert help_commands(tree.subcommands(root).choices["serve"]) == ["web", "mcp", "openai"]  # type: ignore[union-attr]
    assert "eval" not in root.format_usage()  # the old names are not listed in {...} either
    assert "--judge-model wherever the role exists" in " ".join(root.format_help().split())
    assert help_commands(tree.subcommands(root).choices["bookmarks"]) == [  # type: ignore[union-attr]
        "act", "bench", "fetch", "positions"
    ]  # fmt: skip


@pytest.mark.parametrize(("old", "new"), sorted(aliases.OLD_PATHS.items()))
def test_an_old_spelling_is_the_same_parser_as_the_new_one(
    old: tuple[str, ...], new: tuple[str, ...]
) -> None:
    root = build_parser()
    old_path, old_parser = tree.command_path(root, old)
    new_path, new_parser = tree.command_path(root, new)
    assert (old_path, new_path) == (list(old), list(new))
    assert old_parser is new_parser and old_parser.prog == f"personae {' '.join(new)}"


def test_every_paper_command_lives_in_its_group() -> None:
    """ARCANE is one group, not six; ``profile`` is CharacterHub's command, shown at the top."""
    root = build_parser()
    arcane = help_commands(tree.command_path(root, ["arcane"])[1])
    assert {"import", "build-arcs", "build-probes", "act", "eval", "export"} <= set(arcane)
    assert (
        tree.command_path(root, ["characterhub", "profile"])[1]
        is tree.command_path(root, ["profile"])[1]
    )


@pytest.mark.parametrize("short", ["web", "mcp"])
def test_a_short_form_is_the_serve_command_and_warns_nothing(short: str) -> None:
    """``personae web``/``personae mcp`` stay (MCP client configurations use the latter)."""
    root = build_parser()
    assert tree.command_path(root, [short])[1] is tree.command_path(root, ["serve", short])[1]
    assert short not in help_commands(root) and "Short forms: 'personae web'" in " ".join(
        root.format_help().split()
    )
    assert aliases.deprecations(root, [short, "--help"]) == []


def leaves(parser: argparse.ArgumentParser, names: list[str] | None = None) -> set[int]:
    """The ids of the command parsers below ``parser`` (through ``names`` at the first level)."""
    action = tree.subcommands(parser)
    if action is None:
        return {id(parser)}
    found: set[int] = set()
    for name in action.choices if names is None else names:
        found |= leaves(action.choices[name], tree.visible_commands(action.choices[name]))
    return found


def shown_paths(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command ``--help`` pages list, by its path, with its parser."""
    found = []
    for name in tree.visible_commands(parser):
        child = tree.subcommands(parser).choices[name]  # type: ignore[union-attr]
        found += [((*path, name), child), *shown_paths(child, (*path, name))]
    return found


def test_every_command_is_registered_under_the_name_help_lists_it_by() -> None:
    """A command's own name (``prog``, set where its module registers it) is its path in the
    tree: nothing is re-hung. Only the everyday verbs are a paper's command shown twice, and
    the old spellings add only hidden names that lead to listed commands."""
    root = build_parser()
    listed = shown_paths(root)
    for path, parser in listed:
        if len(path) == 2 and path[1] in tree.EVERYDAY and tree.EVERYDAY[path[1]] == path:
            assert parser.prog == f"personae {path[1]}"
        else:
            assert parser.prog == f"personae {' '.join(path)}", path
    shown = tree.visible_commands(root)
    hidden = [name for name in tree.subcommands(root).choices if name not in shown]  # type: ignore[union-attr]
    assert sorted(hidden) == sorted([*OLD_TOP, *tree.SHORTCUTS])
    reachable = leaves(root, shown)
    for name in hidden:
        assert leaves(tree.subcommands(root).choices[name]) <= reachable, name  # type: ignore[union-attr]


def test_the_alias_table_maps_old_paths_to_commands_the_tree_lists() -> None:
    listed = {path for path, _parser in shown_paths(build_parser())}
    assert set(aliases.OLD_PATHS.values()) <= listed
    assert set(aliases.OLD_FLAGS) <= listed
    assert not set(aliases.OLD_PATHS) & listed  # an old path is never also a new one


def test_old_and_new_spellings_run_alike_and_only_the_old_one_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    argv = [str(story), "--character", "Haruhi", "--test"]
    with pytest.warns(aliases.DeprecatedSpelling) as caught:
        assert main(["data", "positions", *argv]) == 0
    old_out = capsys.readouterr().out
    assert [str(w.message) for w in caught] == [
        "'personae data positions' is now 'personae bookmarks positions'; "
        "the old spelling goes in the next release"
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new spelling warns about nothing
        assert main(["bookmarks", "positions", *argv]) == 0
    assert capsys.readouterr().out == old_out and "Haruhi in club" in old_out


@pytest.mark.parametrize(
    ("argv", "dest", "value", "note"),
    [
        (["arc", "show", "B", "--character", "X", "--at-chapter", "3"], "at_chapter", 3,
         "'--at-chapter' is now '--chapter' (personae arcane show-arc)"),
        (["export", "arcane", "B", "--format", "sft", "--teacher=openai:t"], "teacher",
         ["openai:t"], "'--teacher' is now '--teacher-model' (personae arcane export)"),
        (["bookmarks", "bench", "s.json", "--judge", "nli"], "judge", "nli",
         "'--judge' is now '--judge-method' (personae bookmarks bench)"),
    ],
)  # fmt: skip
def test_a_renamed_flag_keeps_its_old_spelling_with_a_note(
    argv: list[str], dest: str, value: object, note: str
) -> None:
    root = build_parser()
    assert getattr(root.parse_args(argv), dest) == value
    assert any(n.startswith(note) for n in aliases.deprecations(root, argv))
    group, name = aliases.OLD_PATHS.get(tuple(argv[:2]), tuple(argv[:2]))
    new_flag = note.split("'")[3]
    new_argv = [group, name, *(w.replace(note.split("'")[1], new_flag) for w in argv[2:])]
    assert getattr(root.parse_args(new_argv), dest) == value
    assert aliases.deprecations(root, new_argv) == []
    leaf = tree.command_path(root, new_argv)[1]
    assert new_flag in leaf.format_help() and note.split("'")[1] + " " not in leaf.format_help()


def test_the_model_roles_share_one_vocabulary() -> None:
    """Every flag that names a model ends in ``-model``; no other flag does."""
    root = build_parser()
    pending = [root]
    model_flags: set[str] = set()
    while pending:
        parser = pending.pop()
        action = tree.subcommands(parser)
        if action is not None:
            pending += [action.choices[name] for name in tree.visible_commands(parser)]
            continue
        for option in parser._actions:
            flags = [f for f in option.option_strings if f.startswith("--")]
            shown = " ".join(flags)
            if any(f.endswith("-model") for f in flags):
                model_flags.add(shown)
                assert "model" in (option.help or "") or "provider:model" in (option.help or "")
            else:
                assert "provider:model" not in (option.help or ""), (parser.prog, shown)
    assert {"--model", "--fast-model", "--judge-model", "--teacher-model"} <= model_flags
    help_text = tree.command_path(root, ["amadeus", "eval-qa"])[1].format_help()
    assert "--gs-model PROVIDER:MODEL" in help_text and "GS_MODEL" not in help_text


def test_fetch_needs_no_dataset_word_under_its_group() -> None:
    root = build_parser()
    assert root.parse_args(["bookmarks", "fetch"]).dataset == "bookmarks"
    assert root.parse_args(["data", "fetch", "bookmarks"]).dataset == "bookmarks"


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["profile", "Kenshiro", "--franchize", "Fist"],
         r"unknown flag --franchize; did you mean '--franchise'.*\(see 'personae profile --help'\)"),
        (["arcane", "build-arc", "B"],
         r"unknown command 'build-arc'; did you mean 'build-arcs'.*see 'personae arcane --help'"),
        (["arcane", "zzz"], r"unknown command 'zzz'; the commands: import, chapters, build-arcs"),
        (["bookmark", "act"], r"unknown command 'bookmark'; did you mean 'bookmarks'\?"),
        (["evl", "arcane"], r"unknown command 'evl'; did you mean 'eval'\?"),
        (["-v", "arcan"], r"unknown command 'arcan'; did you mean 'arcane'\?"),
        (["doctor", "-x"], r"unknown flag -x \(see 'personae doctor --help'\)"),
        (["arcane", "act", "B", "--charcter", "X", "--chapter", "1", "S"],
         r"unknown flag --charcter; did you mean '--character'\?"),
        (["doctor", "--zzz=1"], r"unknown flag --zzz \(see 'personae doctor --help'\)"),
        (["doctor", "extra", "words"], r"unexpected arguments: extra words"),
        (["mcp", "--transport", "htp"], r"invalid choice 'htp'; did you mean 'http'\?"),
        (["mcp", "--transport", "zzz"], r"invalid choice 'zzz'; choose from stdio, http"),
        (["profile", "--max-rounds", "three"], r"invalid int value: 'three'"),
        ([], r"the following arguments are required: COMMAND \(see 'personae --help'\)"),
    ],
)  # fmt: skip
def test_a_typo_is_one_line_with_a_suggestion(
    argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    captured = capsys.readouterr()
    assert done.value.code == 2 and captured.out == "" and "usage:" not in captured.err
    assert_one_line_error(captured.err, problem)


def test_the_console_prints_a_deprecation_as_one_line(tmp_path: Path) -> None:
    """Through the console entry point (``run``) the warning is one ``personae: deprecated:``
    line on stderr, and the command still runs (here: its help on stdout, exit 0)."""
    done = subprocess.run(
        [sys.executable, "-c", "from personae.cli import run; run()", "novel", "chapters", "-h"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0 and done.stdout.startswith("usage: personae arcane chapters")
    assert done.stderr == (
        "personae: deprecated: 'personae novel chapters' is now 'personae arcane chapters'; "
        "the old spelling goes in the next release\n"
    )


def test_other_warnings_keep_their_own_display(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[object] = []
    show = cli._one_line_deprecations(lambda message, *rest, **named: seen.append(message))
    show(aliases.DeprecatedSpelling("old"), aliases.DeprecatedSpelling, "f.py", 1)
    show(UserWarning("other"), UserWarning, "f.py", 1)
    assert capsys.readouterr().err == "personae: deprecated: old\n"
    assert [str(m) for m in seen] == ["other"]


def test_a_flag_prefix_or_a_word_after_double_dash_is_not_a_typo() -> None:
    profile = tree.command_path(build_parser(), ["profile"])[1]
    assert typos.unknown_flag(profile, ["X", "--franch"]) is None  # argparse's own prefix rule
    assert typos.unknown_flag(profile, ["--", "--not-a-flag"]) is None
    assert typos.unknown_flag(profile, ["--franchise=F", "--frnchise"]) == "--frnchise"


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv", [["arcane", "eval", "--help"], ["bookmarks", "fetch", "--help"], ["arcane", "zz"]]
)
def test_the_new_spellings_load_no_heavy_library(argv: list[str]) -> None:
    from test_cli_startup import HEAVY, run_cli

    out, err, loaded = run_cli(*argv)
    assert ("usage: personae" in out and "EXIT:0" in err) or "unknown command 'zz'" in err
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


STUB_PAPER = {
    "echo/__init__.py": '"""ECHO\'s commands (a stub paper)."""\n\nHELP = "ECHO: say a line back"\n',
    "echo/say.py": (
        '"""`personae echo say`: the line, back (a stub command)."""\n\n\n'
        "def register(commands):\n"
        '    """Add `echo say`."""\n'
        '    parser = commands.add_parser("say", help="say LINE back")\n'
        '    parser.add_argument("line")\n'
        "    parser.set_defaults(handler=lambda args: print(args.line, args.line))\n"
    ),
}
"""A new paper's folder holding one command module, as the Adding-a-paper guide says."""


def test_a_paper_folder_with_one_command_module_is_a_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Adding a paper's command is adding one module in its folder: no table to edit."""
    for path, text in STUB_PAPER.items():
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    monkeypatch.setattr(personae.commands, "__path__", [*personae.commands.__path__, str(tmp_path)])
    for name in ("personae.commands.echo", "personae.commands.echo.say"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    root = build_parser()
    assert help_commands(root)[-2:] == ["arcane", "echo"]
    assert help_commands(tree.command_path(root, ["echo"])[1]) == ["say"]
    assert "ECHO: say a line back" in root.format_help()
    monkeypatch.setattr(cli, "_parser", build_parser)
    assert main(["echo", "say", "hi"]) == 0 and capsys.readouterr().out == "hi hi\n"

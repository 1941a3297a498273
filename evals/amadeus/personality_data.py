"""InCharacter's questionnaires, characters and personality labels, as the evaluation reads them.

The AMADEUS paper evaluates personality with the interview protocol of InCharacter (Wang et al.
2024): 60 16Personalities items for MBTI, and BFI. The questionnaires, the 32 characters and
their personality-database labels ship with Personae (``evals/amadeus/data/incharacter``, MIT, see its
``LICENSE``), so the evaluation works on a fresh install; ``--data DIR`` reads an InCharacter
checkout instead and any questionnaire JSON of the same schema can be passed as a file (a
120-item BFI, for instance).

Reverse keying is decided by each item's ``category``, never by the file's ``reverse`` list:
in 16Personalities that list wrongly includes item 25 ("You enjoy watching people argue",
category T), and InCharacter's own scoring uses the category too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from personae.errors import InputError
from personae.files import read_json, require_file

QuestionnaireKind = Literal["16Personalities", "BFI"]
QUESTIONNAIRE_NAMES: dict[str, QuestionnaireKind] = {
    "mbti": "16Personalities",
    "16personalities": "16Personalities",
    "16p": "16Personalities",
    "bfi": "BFI",
}
MBTI_ORDER = ("E/I", "S/N", "T/F", "P/J")
"""Letter order of an MBTI code."""
SLOAN_ORDER = ("Extraversion", "Neuroticism", "Conscientiousness", "Agreeableness", "Openness")
"""Letter order of a Big Five SLOAN code (the paper's Table 5)."""
SLOAN_LETTERS = {
    "Extraversion": ("S", "R"),
    "Neuroticism": ("L", "C"),
    "Conscientiousness": ("O", "U"),
    "Agreeableness": ("A", "E"),
    "Openness": ("I", "N"),
}
"""(high, low) letters per BFI dimension: social/reserved, limbic/calm, organized/unstructured,
accommodating/egocentric, inquisitive/non-curious."""
_FIX = "use --questionnaire mbti or bfi, or a questionnaire JSON file of InCharacter's schema"


@dataclass(frozen=True)
class Item:
    """One questionnaire item."""

    id: str
    statement: str
    """The item as a statement (``origin_en``), for option conversion."""
    question: str
    """The interview question (``rewritten_en`` or ``rewritten_zh``)."""
    dimension: str
    category: str
    reverse: bool
    """Whether agreeing points to the dimension's second letter / low pole (by category)."""


@dataclass(frozen=True)
class Questionnaire:
    """Items grouped by dimension, with the scale and the dimension descriptions."""

    name: str
    kind: QuestionnaireKind
    items: tuple[Item, ...]
    dimensions: tuple[str, ...]
    """Dimensions in code order (MBTI E/I, S/N, T/F, P/J; SLOAN E, N, C, A, O)."""
    scale: tuple[int, int]
    """Answer range, e.g. (1, 7)."""
    descriptions: Mapping[str, str]
    """The dimension descriptions the expert rater reads."""

    def by_dimension(self, dimension: str) -> list[Item]:
        """The items of ``dimension`` in id order."""
        return [item for item in self.items if item.dimension == dimension]

    @property
    def midpoint(self) -> float:
        """The threshold between the two letters (16P score 50; BFI 3)."""
        return 50.0 if self.kind == "16Personalities" else (self.scale[0] + self.scale[1]) / 2

    def letters(self, dimension: str) -> tuple[str, str]:
        """(high, low) letters of ``dimension``: E|I for E/I; S|R for Extraversion."""
        if self.kind == "16Personalities":
            first, second = dimension.split("/")
            return first, second
        return SLOAN_LETTERS[dimension]


def data_dir(override: Path | None = None) -> Path:
    """The InCharacter data folder: ``override`` or the shipped package data."""
    if override is not None:
        return override
    return Path(str(resources.files("personae.evals.amadeus") / "data" / "incharacter"))


def _read_json(path: Path, what: str) -> Any:
    if not path.exists():
        raise InputError(f"{what} {path} not found", _FIX)
    require_file(path, what, _FIX)
    return read_json(path, _FIX)


def _questionnaire_problem(raw: Any) -> str | None:
    """What keeps ``raw`` from being an InCharacter questionnaire, or ``None``."""
    if not isinstance(raw, dict):
        return "is not a JSON object"
    questions = raw.get("questions")
    if not isinstance(questions, dict) or not questions:
        return "has no 'questions' object"
    for item_id, item in questions.items():
        if not str(item_id).isdigit():
            return f"has a question id {str(item_id)[:20]!r} that is not a number"
        if not isinstance(item, dict) or not all(
            isinstance(item.get(key), str) for key in ("dimension", "category")
        ):
            return f"has a question {item_id} without a text 'dimension' and 'category'"
    scale = raw.get("range")
    if not (
        isinstance(scale, list)
        and len(scale) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in scale)
        and scale[0] < scale[1]
    ):
        return "has no 'range' of two whole numbers, lowest first"
    prompts = raw.get("prompts", {})
    if not isinstance(prompts, dict) or not isinstance(prompts.get("dim_desc", {}), dict):
        return "has 'prompts' that are not an object with a 'dim_desc' object"
    return None


def is_reverse(kind: QuestionnaireKind, dimension: str, category: str) -> bool:
    """Reverse keying by category: 16P ``category == dimension[-1]``; BFI ``negative``."""
    if kind == "16Personalities":
        return category == dimension.split("/")[-1]
    return category == "negative"


def load_questionnaire(
    name: str, *, data: Path | None = None, language: str = "en"
) -> Questionnaire:
    """``mbti``/``bfi`` (shipped or under ``data``), or a questionnaire JSON file."""
    kind = QUESTIONNAIRE_NAMES.get(name.strip().casefold())
    if kind is not None:
        root = data_dir(data)
        path = root / f"{kind}.json"
        if not path.is_file():
            path = root / "questionnaires" / f"{kind}.json"
    else:
        path = Path(name)
        if path.suffix != ".json":
            raise InputError(f"unknown questionnaire {name!r}", _FIX)
    raw = _read_json(path, "questionnaire")
    problem = _questionnaire_problem(raw)
    if problem:
        raise InputError(f"the questionnaire {path} {problem}", _FIX)
    found = str(raw.get("name", ""))
    kind = (
        "16Personalities"
        if "/" in str(next(iter(raw["questions"].values()))["dimension"])
        else "BFI"
    )
    key = f"rewritten_{language}"
    items = tuple(
        Item(
            id=str(item_id),
            statement=str(item.get(f"origin_{language}") or item.get("origin_en", "")),
            question=str(item.get(key) or item.get("rewritten_en", "")),
            dimension=str(item["dimension"]),
            category=str(item["category"]),
            reverse=is_reverse(kind, str(item["dimension"]), str(item["category"])),
        )
        for item_id, item in sorted(raw["questions"].items(), key=lambda kv: int(kv[0]))
    )
    present = {item.dimension for item in items}
    order = MBTI_ORDER if kind == "16Personalities" else SLOAN_ORDER
    descriptions = raw.get("prompts", {}).get("dim_desc", {})
    return Questionnaire(
        name=found or kind,
        kind=kind,
        items=items,
        dimensions=tuple(d for d in order if d in present),
        scale=(int(raw["range"][0]), int(raw["range"][1])),
        descriptions={d: str(descriptions.get(d, d)) for d in present},
    )


@dataclass(frozen=True)
class LabelledCharacter:
    """An InCharacter character: its id, aliases and interviewer."""

    id: str
    """InCharacter id, e.g. ``Hermione-en``."""
    aliases: tuple[str, ...]
    experimenter: str
    """Who interviews the character in InCharacter (Harry for Hermione)."""


def load_characters(data: Path | None = None) -> dict[str, LabelledCharacter]:
    """The 32 InCharacter characters by id."""
    raw = _read_json(data_dir(data) / "characters.json", "character list")
    return {
        key: LabelledCharacter(key, tuple(value.get("alias", [])), str(value.get("experimenter")))
        for key, value in raw.items()
    }


def find_character(
    name: str, characters: Mapping[str, LabelledCharacter]
) -> LabelledCharacter | None:
    """The InCharacter character whose id or an alias is ``name`` (case-insensitive)."""
    wanted = name.strip().casefold()
    for character in characters.values():
        names = {character.id.casefold(), character.id.rsplit("-", 1)[0].casefold()}
        names |= {alias.casefold() for alias in character.aliases}
        if wanted in names:
            return character
    return None


Labels = dict[str, dict[str, str]]
"""``{character: {dimension: letter or "X"}}`` for one questionnaire."""


def _code_labels(code: str, questionnaire: Questionnaire) -> dict[str, str]:
    if len(code) != len(questionnaire.dimensions):
        raise InputError(
            f"label {code!r} does not have {len(questionnaire.dimensions)} letters",
            "write one letter per dimension (X for neutral)",
        )
    labels = {}
    for dimension, letter in zip(questionnaire.dimensions, code.upper(), strict=True):
        if letter != "X" and letter not in questionnaire.letters(dimension):
            raise InputError(
                f"label {code!r}: {letter} is not a {dimension} letter",
                f"use {' or '.join(questionnaire.letters(dimension))} (X for neutral)",
            )
        labels[dimension] = letter
    return labels


def load_labels(
    source: str | None, questionnaire: Questionnaire, *, data: Path | None = None
) -> Labels:
    """Labels of ``questionnaire`` per character.

    ``source`` is ``pdb`` (default; personality-database votes, the source AMADEUS uses),
    ``annotation`` (needs an InCharacter checkout in ``data``), or a JSON file: InCharacter's
    ``{"pdb": {character: {questionnaire: {dimension: {"type": "H"|"L"|"X"}}}}}`` or simple
    codes ``{character: {"16Personalities": "ENFP", "BFI": "SCUAI"}}``.
    """
    if source in (None, "pdb", "annotation"):
        group = source or "pdb"
        path = data_dir(data) / ("labels_pdb.json" if group == "pdb" else "characters_labels.json")
        if not path.is_file():
            path = data_dir(data) / "characters_labels.json"
        raw = _read_json(path, "label file")[group]
    else:
        raw = _read_json(Path(source), "label file")
        if isinstance(raw, dict) and len(raw) == 1 and isinstance(next(iter(raw.values())), dict):
            only = next(iter(raw))
            if only in ("pdb", "annotation"):
                raw = raw[only]
    labels: Labels = {}
    for character, tests in dict(raw).items():
        entry = tests.get(questionnaire.kind) if isinstance(tests, dict) else None
        if entry is None and isinstance(tests, dict):
            entry = tests.get("labels", {}).get(questionnaire.kind)
        if isinstance(entry, str):
            labels[character] = _code_labels(entry, questionnaire)
        elif isinstance(entry, dict):
            labels[character] = {
                dimension: _letter(questionnaire, dimension, str(value.get("type", "X")))
                for dimension, value in entry.items()
                if dimension in questionnaire.dimensions
            }
    return labels


def _letter(questionnaire: Questionnaire, dimension: str, kind: str) -> str:
    high, low = questionnaire.letters(dimension)
    return {"H": high, "L": low}.get(kind.upper(), "X")


def code_of(labels: Mapping[str, str], questionnaire: Questionnaire) -> str:
    """The type code (``ESTJ``, ``SCOEN``) of per-dimension letters, ``X`` where unknown."""
    return "".join(labels.get(dimension, "X") for dimension in questionnaire.dimensions)

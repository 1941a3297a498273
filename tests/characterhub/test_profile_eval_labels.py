"""`eval profile`: "reference allowed / excluded" only when one profile excluded pages; name check."""

from __future__ import annotations

from pathlib import Path

from personae.evals.characterhub.profile_eval import (
    CharacterCase,
    ProfileDocument,
    character_mismatch,
    run_labels,
)
from personae.evals.characterhub.profile_reference import ProfileReference


def doc(character: str = "Toki", excluded: tuple[str, ...] = ()) -> ProfileDocument:
    return ProfileDocument(character=character, profile="I am Toki.", excluded_urls=list(excluded))


REF = "https://hokuto.fandom.com/wiki/Toki"


def test_one_profile_made_with_exclude_url_gives_allowed_and_excluded() -> None:
    documents = [
        (Path("a/toki/profile.json"), doc()),
        (Path("b/toki/profile.json"), doc("Toki", (REF,))),
    ]
    assert run_labels(documents) == ["planned (reference allowed)", "planned (reference excluded)"]


def test_without_an_exclusion_the_folders_tell_the_runs_apart() -> None:
    documents = [(Path("run1/toki/profile.json"), doc()), (Path("run2/toki/profile.json"), doc())]
    assert run_labels(documents) == ["planned (run1)", "planned (run2)"]
    both = [
        (Path("x/toki/p.json"), doc("Toki", (REF,))),
        (Path("y/toki/p.json"), doc("Toki", (REF,))),
    ]
    assert run_labels(both) == ["planned (x)", "planned (y)"]
    assert run_labels([(Path("x/toki/p.json"), doc("Toki", (REF,)))]) == ["planned"]


def case(character: str, title: str) -> CharacterCase:
    reference = ProfileReference(title=title, url=REF)
    return CharacterCase(character, reference, REF, "given", [(Path("p.json"), doc(character))])


def test_a_reference_of_another_character_is_a_warning() -> None:
    warning = character_mismatch(case("Kenshiro", "Raoh"))
    assert warning == (
        f"the profiles are of 'Kenshiro' but the reference page is 'Raoh' ({REF}); "
        "check the reference"
    )
    assert character_mismatch(case("Toki", "Toki (Hokuto no Ken)")) is None
    assert character_mismatch(case("Kenshirō", "Kenshiro")) is None
    assert character_mismatch(case("Rin Tosaka", "Tosaka Rin")) is None

"""Each paper's evaluation protocol: datasets, judges, metrics, reports; and its front door.

Holds: what a benchmark or an evaluation needs to reproduce a paper's tables (its judges'
prompts name the table they carry), one subfolder per paper.
Not here: anything the graphs need at run time (evals import graphs, never the reverse).

``from personae.evals import ...`` is the protocols' face of the API (``personae`` is the
apps'): one evaluation runner per paper protocol (benchmark, evaluations, perturbation,
exports), their run settings and their typed results. Each has the shape of every public call:
required inputs positional, the rest keywords, run settings in ``context=``, steps reported to
``progress=`` (:class:`personae.Progress`), errors from :class:`personae.PersonaeError`. Names
load on first use, as ``personae``'s do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from personae.public_names import load_public_name

_EXPORTS: dict[str, tuple[str, str]] = {
    # The one list of the public names: __all__ and the TYPE_CHECKING imports below are
    # generated from it (`uv run python scripts/public_names.py`), __getattr__ reads it.
    # CharacterHub: the profile evaluation (Tables 9-10)
    "evaluate_profiles": ("personae.evals.characterhub.profile_eval", "evaluate_profiles"),
    "evaluate_profile_files": ("personae.runners.characterhub_eval", "evaluate_profile_files"),
    "ProfileEvalContext": ("personae.evals.characterhub.profile_eval", "ProfileEvalContext"),
    "ProfileEvalReport": ("personae.evals.characterhub.profile_eval", "ProfileEvalReport"),
    "load_profile_document": (
        "personae.evals.characterhub.profile_eval",
        "load_profile_document",
    ),
    "ProfileDocument": ("personae.evals.characterhub.profile_eval", "ProfileDocument"),
    "ProfileReference": ("personae.evals.characterhub.profile_reference", "ProfileReference"),
    # BOOKMARKS: the benchmark (Table 2)
    "run_bench": ("personae.evals.bookmarks.bench", "run_bench"),
    "BenchContext": ("personae.evals.bookmarks.bench", "BenchContext"),
    "BenchOutcome": ("personae.evals.bookmarks.bench", "BenchOutcome"),
    # AMADEUS: personality (Tables 4-5), persona QA (Table 6), chunking and human ratings
    "evaluate_personality": ("personae.runners.amadeus_personality", "evaluate_personality"),
    "PersonalityReport": ("personae.runners.amadeus_personality", "PersonalityReport"),
    "evaluate_persona_qa": ("personae.runners.amadeus_qa", "evaluate_persona_qa"),
    "PersonaQAReport": ("personae.runners.amadeus_qa", "PersonaQAReport"),
    "analyse_persona_chunks": ("personae.runners.amadeus_eval", "analyse_persona_chunks"),
    "ChunkAnalysis": ("personae.runners.amadeus_eval", "ChunkAnalysis"),
    "export_rating_sheet": ("personae.runners.amadeus_eval", "export_rating_sheet"),
    "RatingSheet": ("personae.runners.amadeus_eval", "RatingSheet"),
    # ARCANE: the evaluation (Table 2), its ablations, the perturbation, the exports, the votes
    "evaluate_arcane": ("personae.runners.arcane_eval", "evaluate_arcane"),
    "ArcaneEvalContext": ("personae.evals.arcane.eval_graph", "ArcaneEvalContext"),
    "ArcaneEvalRun": ("personae.runners.arcane_eval", "ArcaneEvalRun"),
    "evaluate_pov_control": ("personae.runners.arcane_eval", "evaluate_pov_control"),
    "PovControl": ("personae.runners.arcane_eval", "PovControl"),
    "perturb_arcane": ("personae.runners.arcane_eval", "perturb_arcane"),
    "PerturbRun": ("personae.runners.arcane_eval", "PerturbRun"),
    "write_arcane_report": ("personae.runners.arcane_eval", "write_arcane_report"),
    "ArcaneReport": ("personae.runners.arcane_eval", "ArcaneReport"),
    "export_training_data": ("personae.runners.arcane_export", "export_training_data"),
    "TrainingExport": ("personae.runners.arcane_export", "TrainingExport"),
    "export_vote_sheet": ("personae.runners.arcane_votes", "export_vote_sheet"),
    "read_votes": ("personae.runners.arcane_votes", "read_votes"),
    "resume_with_votes": ("personae.runners.arcane_votes", "resume_with_votes"),
    "VoteSheet": ("personae.runners.arcane_votes", "VoteSheet"),
}

# generated from _EXPORTS by `uv run python scripts/public_names.py`: do not edit
if TYPE_CHECKING:  # what IDEs, pyright and mypy read; __getattr__ loads at run time
    from personae.evals.arcane.eval_graph import ArcaneEvalContext
    from personae.evals.bookmarks.bench import BenchContext, BenchOutcome, run_bench
    from personae.evals.characterhub.profile_eval import (
        ProfileDocument,
        ProfileEvalContext,
        ProfileEvalReport,
        evaluate_profiles,
        load_profile_document,
    )
    from personae.evals.characterhub.profile_reference import ProfileReference
    from personae.runners.amadeus_eval import (
        ChunkAnalysis,
        RatingSheet,
        analyse_persona_chunks,
        export_rating_sheet,
    )
    from personae.runners.amadeus_personality import PersonalityReport, evaluate_personality
    from personae.runners.amadeus_qa import PersonaQAReport, evaluate_persona_qa
    from personae.runners.arcane_eval import (
        ArcaneEvalRun,
        ArcaneReport,
        PerturbRun,
        PovControl,
        evaluate_arcane,
        evaluate_pov_control,
        perturb_arcane,
        write_arcane_report,
    )
    from personae.runners.arcane_export import TrainingExport, export_training_data
    from personae.runners.arcane_votes import (
        VoteSheet,
        export_vote_sheet,
        read_votes,
        resume_with_votes,
    )
    from personae.runners.characterhub_eval import evaluate_profile_files

__all__ = [
    "ArcaneEvalContext",
    "ArcaneEvalRun",
    "ArcaneReport",
    "BenchContext",
    "BenchOutcome",
    "ChunkAnalysis",
    "PersonaQAReport",
    "PersonalityReport",
    "PerturbRun",
    "PovControl",
    "ProfileDocument",
    "ProfileEvalContext",
    "ProfileEvalReport",
    "ProfileReference",
    "RatingSheet",
    "TrainingExport",
    "VoteSheet",
    "analyse_persona_chunks",
    "evaluate_arcane",
    "evaluate_persona_qa",
    "evaluate_personality",
    "evaluate_pov_control",
    "evaluate_profile_files",
    "evaluate_profiles",
    "export_rating_sheet",
    "export_training_data",
    "export_vote_sheet",
    "load_profile_document",
    "perturb_arcane",
    "read_votes",
    "resume_with_votes",
    "run_bench",
    "write_arcane_report",
]
# end of generated


def __getattr__(name: str) -> Any:
    """Load a public name on first use (the heavy libraries load with it, not with Personae)."""
    return load_public_name(globals(), _EXPORTS, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})

"""AMADEUS's reported settings (§Experiments: Settings, Tables 4-6) beside a run's.

The paper role-plays with GPT-4.1, Gemma3-27B or Qwen3-32B (Table 6; Tables 4-5 "using the
GPT-4.1 setting") and runs Guided Selection and the Attribute Extractor on GPT-4.1
(``gpt-4.1-2025-04-14``) whatever model role-plays; N = 30, K = 2, ACTS chunks, BGE-M3 (also
Qwen3-0.6B and mE5-large-instruct in Table 1). It names no rater, judge or sampling settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from personae.evals.paper_settings import PaperSetting

if TYPE_CHECKING:
    from personae.graphs.amadeus.graph import AmadeusContext

PAPER_GS_MODEL = "openai:gpt-4.1 (gpt-4.1-2025-04-14, Settings)"
ASSESSMENTS = {
    "er": "InCharacter (Wang et al. 2024b; its default: expert rating, its prompts)",
    "er-personae": "expert rating, our prompts (er-personae)",
    "oc": "option conversion, our prompts (oc)",
}
"""``--assess`` as the settings table names it; only ``er`` is InCharacter's own wording."""
PAPER_METHOD = {"amadeus": "AMADEUS", "naive": "Naive RAG (with ACTS)", "none": "w/o RAG"}


def _model(agent: AmadeusContext, spec: str) -> str:
    sampling = agent.sampling("judge")
    shown = ", ".join(f"{k} {v:g}" for k, v in sampling.items())
    return agent.cache_name(spec) + (f" ({shown})" if shown else "")


def agent_settings(agent: AmadeusContext) -> list[PaperSetting]:
    """The role-play agent's rows: models, N, K, splitter, embedding."""
    gs = agent.gs_model or agent.model
    ae = agent.ae_model or gs
    strong = ", ".join(f"{k} {v:g}" for k, v in agent.sampling("strong").items())
    return [
        PaperSetting(
            "role-play model",
            "openai:gpt-4.1 (Tables 4-5; Table 6 also Gemma3-27B, Qwen3-32B)",
            agent.cache_name(agent.model) + (f" ({strong})" if strong else ""),
        ),
        PaperSetting("Guided Selection model", PAPER_GS_MODEL, _model(agent, gs)),
        PaperSetting("Attribute Extractor model", PAPER_GS_MODEL, _model(agent, ae)),
        PaperSetting("N (Guided Selection checks)", "30 (Settings)", str(agent.n_iter)),
        PaperSetting("K (slot size)", "2 (Settings)", str(agent.slot_k)),
        PaperSetting("splitter", "acts (ACTS)", agent.splitter),
        PaperSetting(
            "embedding",
            "openai:bge-m3 (BGE-M3; Table 1 also Qwen3-0.6B, mE5)",
            agent.embedding,
        ),
    ]


def personality_settings(
    agent: AmadeusContext,
    *,
    questionnaire: str,
    items: int,
    characters: int,
    assess: str,
    rater: str,
) -> list[PaperSetting]:
    """Rows of ``amadeus eval-personality`` (Tables 4-5, and Table 6's MBTI / BFI HS rows)."""
    paper_items = "60 (16Personalities)" if questionnaire == "16Personalities" else "120 (BFI)"
    return [
        PaperSetting("method", "AMADEUS (Tables 4-5)", PAPER_METHOD.get(agent.method, "")),
        *agent_settings(agent),
        PaperSetting("questionnaire items", paper_items, f"{items} ({questionnaire})"),
        PaperSetting("characters", "15 (CharacterRAG)", str(characters)),
        PaperSetting("interview", "InCharacter (Wang et al. 2024b)", "InCharacter"),
        PaperSetting(
            "assessment",
            "InCharacter (Wang et al. 2024b; its default: expert rating, its prompts)",
            ASSESSMENTS.get(assess, assess),
        ),
        PaperSetting("rater", "not stated", rater),
    ]


def persona_qa_settings(
    agent: AmadeusContext, *, items: int, characters: int, judge: str
) -> list[PaperSetting]:
    """Rows of ``amadeus eval-qa`` (Table 6's CharacterRAG rows)."""
    return [
        PaperSetting(
            "method", "AMADEUS, Naive RAG, w/o RAG (Table 6)", PAPER_METHOD.get(agent.method, "")
        ),
        *agent_settings(agent),
        PaperSetting("QA items", "450 (CharacterRAG, 30 per character)", str(items)),
        PaperSetting("characters", "15 (CharacterRAG)", str(characters)),
        PaperSetting("ACC / ACC_L / HS judge", "not stated", judge),
    ]

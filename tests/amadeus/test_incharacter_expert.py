"""InCharacter's expert rating on the wire: the prompts its ``assess()`` builds, compared whole.

The expected messages are rebuilt here the way Neph0s/InCharacter builds them
(``code/prompts.py`` copied below; ``code/personality_tests.py`` ``assess()`` for
``interview_assess_batch_anonymous`` re-implemented step by step), so a drift in our template
text or in any step (the MBTI rename, the anonymisation, the "I " mark, the phrases removed,
the Conscientiousness sentence) fails here.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from personae.agents.amadeus.incharacter_expert import first_share, rate_batch
from personae.testing import ScriptedChatModel

# Neph0s/InCharacter, code/prompts.py (HEAD f554202), the three templates as published.
INCHARACTER_PROMPTS = {
    "background_template": """You are an expert in Psychometrics, especially {}. I am conducting the {} test on someone. I am gauging his/her position on the {} dimension through a series of open-ended questions. For clarity, here's some background this particular dimension:
===
{}
===

My name is {}. I've invited a participant, {}, and we had many conversations in {}. I will input the conversations.

Please help me assess {}'s score within the {} dimension of {}. 
""",  # noqa: E501
    "two_score_output": """You should provide the percentage of each category, which sums to 100%, e.g., 30% A and 70% B. 
Please output in the following json format:
===
{{
    "analysis": <your analysis based on the conversations>,
    "result": {{ "{}": <percentage 1>, "{}": <percentage 2> }} (The sum of percentage 1 and percentage 2 should be 100%. Output with percent sign.) 
}}""",  # noqa: E501
    "one_score_output": """You should provide the score of {} in terms of {}, which is a number between {} and {}. {} denotes 'not {} at all', {} denotes 'neutral', and {} denotes 'strongly {}'. Other numbers in this range represent different degrees of '{}'. 
Please output in the following json format:
===
{{
    "analysis": <your analysis based on the conversations>,
    "result": <your score>
}}""",  # noqa: E501
}


def incharacter_assess_messages(
    *,
    questionnaire_name: str,
    dim: str,
    dim_desc: str,
    scale: tuple[int, int],
    experimenter: str,
    character_aliases: list[str],
    batch: list[tuple[str, str]],
) -> tuple[str, str]:
    """(sys_prompt, user_input) as InCharacter's ``assess()`` makes them for one ER batch."""
    character_name = character_aliases[0]
    aliases = sorted(set(character_aliases), key=lambda x: len(x), reverse=True)
    responses = [character_name + ": 「" + answer.strip("「」 :") + "」" for _, answer in batch]
    conversations = ""
    for i, ((question, _), response) in enumerate(zip(batch, responses, strict=True)):
        conversations += f"{i + 1}.\n"
        conversations += f"{experimenter}: 「{question}」\n"
        conversations += f"{response}\n"
    background_prompt = INCHARACTER_PROMPTS["background_template"].format(
        questionnaire_name,
        questionnaire_name,
        dim,
        dim_desc,
        experimenter,
        character_name,
        "English",
        character_name,
        dim,
        questionnaire_name,
    )
    if questionnaire_name == "16Personalities":
        background_prompt = background_prompt.replace(
            "16Personalities", "16Personalities (highly similar to MBTI)", 1
        )
        dim_cls1, dim_cls2 = dim.split("/")
        output_format_prompt = INCHARACTER_PROMPTS["two_score_output"].format(dim_cls1, dim_cls2)
    else:
        neutural: float = (scale[0] + scale[1]) / 2
        if neutural == int(neutural):
            neutural = int(neutural)
        output_format_prompt = INCHARACTER_PROMPTS["one_score_output"].format(
            dim, questionnaire_name, scale[0], scale[1], scale[0], dim, neutural, scale[1], dim, dim
        )
    sys_prompt = background_prompt + output_format_prompt
    user_input = "Our conversation is as follows:\n" + conversations + "\n"
    for a in aliases:
        sys_prompt = sys_prompt.replace(a, "<the participant>")
        user_input = user_input.replace(a, "<the participant>")
    sys_prompt = sys_prompt.replace(experimenter, "<the experimenter>")
    user_input = user_input.replace(experimenter, "<the experimenter>")
    sys_prompt = sys_prompt.replace("I ", "I (<the experimenter>) ", 1)
    user_input = user_input.replace(character_name, "<the participant>")
    bad_words = [
        "as an AI language model,",
        "As an AI language model,",
        "As an AI,",
        "as an AI,",
        "I am an AI language model,",
        "being an AI,",
    ]
    for bad_word in bad_words:
        user_input = user_input.replace(bad_word, "")
    sys_prompt = sys_prompt.replace(
        "Other numbers in this range represent different degrees of 'Conscientiousness'.",
        "Other numbers in this range represent different degrees of 'Conscientiousness'. You "
        "must give a score, and you are not allowed to give answers like 'N/A' and 'not "
        "applicable'.",
        1,
    )
    return sys_prompt, user_input


BATCH = [
    ("What do you do at a party, Hermione?", "As an AI, I read a book in the corner."),
    ("Do you enjoy meeting new people?", "Not really. Ron and Harry are enough for me."),
]


def _sent(model: ScriptedChatModel, schema: str) -> tuple[str, str]:
    ((_, messages),) = [(n, m) for n, m in model.calls if n == schema]
    assert len(messages) == 2
    return str(messages[0].content), str(messages[1].content)


async def test_the_16personalities_rater_sends_incharacter_s_prompt_and_reads_two_percentages() -> (
    None
):
    def answer(messages: list[BaseMessage]) -> dict[str, Any]:
        return {"analysis": "reserved", "result": {"E": "30%", "I": "70%"}}

    model = ScriptedChatModel(responders={"InCharacterPoleRating": answer})
    score, analysis, _ = await rate_batch(
        model,
        kind="16Personalities",
        questionnaire="16Personalities",
        dimension="E/I",
        description="E/I Dimension: Extraversion (E) vs Introversion (I)",
        scale=(1, 7),
        language="en",
        experimenter="Harry",
        aliases=("Hermione", "Hermione Granger"),
        pairs=BATCH,
    )
    assert (score, analysis) == (30.0, "reserved")
    expected = incharacter_assess_messages(
        questionnaire_name="16Personalities",
        dim="E/I",
        dim_desc="E/I Dimension: Extraversion (E) vs Introversion (I)",
        scale=(1, 7),
        experimenter="Harry",
        character_aliases=["Hermione", "Hermione Granger"],
        batch=BATCH,
    )
    assert _sent(model, "InCharacterPoleRating") == expected
    system, user = expected
    assert "16Personalities (highly similar to MBTI)" in system
    assert "I (<the experimenter>) am conducting" in system
    assert '"result": { "E": <percentage 1>, "I": <percentage 2> }' in system
    assert "Hermione" not in system + user and "Harry" not in system + user
    assert "2.\n<the experimenter>: 「Do you enjoy meeting new people?」\n" in user
    assert "As an AI" not in user


async def test_the_bfi_rater_sends_incharacter_s_prompt_with_its_conscientiousness_line() -> None:
    model = ScriptedChatModel(
        responders={"InCharacterScaleRating": lambda m: {"analysis": "tidy", "result": 4.5}}
    )
    score, _, _ = await rate_batch(
        model,
        kind="BFI",
        questionnaire="BFI",
        dimension="Conscientiousness",
        description="Conscientiousness: organised, dependable.",
        scale=(1, 5),
        language="en",
        experimenter="Harry",
        aliases=("Hermione",),
        pairs=BATCH,
    )
    assert score == 4.5
    expected = incharacter_assess_messages(
        questionnaire_name="BFI",
        dim="Conscientiousness",
        dim_desc="Conscientiousness: organised, dependable.",
        scale=(1, 5),
        experimenter="Harry",
        character_aliases=["Hermione"],
        batch=BATCH,
    )
    assert _sent(model, "InCharacterScaleRating") == expected
    assert "1 denotes 'not Conscientiousness at all', 3 denotes 'neutral'" in expected[0]
    assert "not allowed to give answers like 'N/A'" in expected[0]


@pytest.mark.parametrize(
    ("first", "second", "share"), [(30, 70, 30.0), (60, 60, 50.0), (0, 0, 50.0), (100, 0, 100.0)]
)
def test_the_first_pole_s_share_is_read_as_incharacter_reads_a_pair_summing_to_100(
    first: float, second: float, share: float
) -> None:
    assert first_share(first, second) == share


def test_an_answer_already_said_by_the_character_keeps_its_speaker() -> None:
    from personae.agents.amadeus.incharacter_expert import speaker_turn

    said = "Hermione: 「I read.」"
    assert speaker_turn("Hermione", said, ("Hermione",)) == said
    assert speaker_turn("Hermione", "「I read.」", ("Hermione",)) == "Hermione: 「I read.」"

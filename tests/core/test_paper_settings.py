"""The paper's settings beside a run's: equal values are never marked as differing."""

from __future__ import annotations

import pytest

from personae.evals.characterhub.paper_settings import sampling_text
from personae.evals.paper_settings import PaperSetting, comparable, settings_text


@pytest.mark.parametrize(
    ("paper", "used"),
    [
        ("gpt-5.1 (§5.1)", "openai:gpt-5.1"),
        ("gpt-4.1 (§4)", "openai:gpt-4.1@http://127.0.0.1:8000/v1"),
        ("openai:gpt-4.1 (gpt-4.1-2025-04-14, Settings)", "openai:gpt-4.1 (temperature 0)"),
        ("openai:deepseek/deepseek-v4-flash (App. F)", "openai:deepseek-v4-flash@https://x/v1"),
        ("temperature=1.0,top_p=0.95,top_k=64 (Table 3)", "temperature=1,top_p=0.95,top_k=64"),
        ("1e-8 (the released runner)", "1e-08"),
        ("30 (Settings)", "30"),
        ("Exact (key move, §4)", "exact"),
    ],
)
def test_equal_values_written_two_ways_do_not_differ(paper: str, used: str) -> None:
    assert not PaperSetting("x", paper, used).differs


@pytest.mark.parametrize(
    ("paper", "used"),
    [
        ("gpt-5.1 (§5.1)", "openai:gpt-5.4-mini"),
        ("temperature=1.0,top_p=0.95,top_k=64 (Table 3)", "temperature=0.7,top_p=0.95,top_k=64"),
        ("temperature=1.0,top_p=0.95,top_k=64 (Table 3)", "temperature=1,top_p=0.95"),
        ("5 (§5.1)", "8"),
        ("LLM yes/no, one action a call", "LLM, 4 action(s) a call (ours)"),
    ],
)
def test_different_values_still_differ(paper: str, used: str) -> None:
    assert PaperSetting("x", paper, used).differs


def test_a_top_k_the_server_was_not_sent_makes_the_sampling_row_differ() -> None:
    record = {"temperature": 1.0, "top_p": 0.95, "top_k": 64, "top_k_sent": False}
    used = sampling_text(record)
    assert used == "temperature=1,top_p=0.95 (top_k=64 not sent: OpenAI's API takes none)"
    assert PaperSetting("search sampling", "temperature=1.0,top_p=0.95,top_k=64", used).differs
    sent = sampling_text({**record, "top_k_sent": True})
    assert not PaperSetting("search sampling", "temperature=1.0,top_p=0.95,top_k=64", sent).differs


def test_the_printed_table_marks_only_real_departures() -> None:
    rows = [
        PaperSetting("acting model", "gpt-5.1 (§5.1)", "openai:gpt-5.1"),
        PaperSetting("temperature", "temperature=1.0 (Table 3)", "temperature=1"),
        PaperSetting("judge", "gpt-4.1 (§4)", "openai:gpt-4o"),
        PaperSetting("embedding", "not stated", "hashing-384"),
    ]
    lines = settings_text("T", rows).splitlines()[1:]
    assert [line[1] for line in lines] == [" ", " ", "*", " "]
    assert comparable("openai:GPT-5.1@http://h/v1") == "gpt-5.1"
    assert comparable("") == "" and comparable("openai:") == "openai:"
    assert not PaperSetting("x", "", "anything").differs  # a paper value left blank

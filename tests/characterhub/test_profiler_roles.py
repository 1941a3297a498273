"""The profiler's search and rewrite roles: their sampling, and where top-k may go."""

from __future__ import annotations

import pytest

from personae.errors import ConfigurationError
from personae.graphs.characterhub.roles import accepts_top_k, parse_role_sampling
from personae.graphs.characterhub.state import ProfilerContext


def test_sampling_is_parsed_and_bad_values_are_one_line_errors() -> None:
    assert parse_role_sampling("temperature=1.0, top-p=0.95,top_k=64", "--search-sampling") == {
        "temperature": 1.0,
        "top_p": 0.95,
        "top_k": 64,
    }
    for bad, message in (
        ("temp=1", "is not a sampling setting"),
        ("top_k=6.5", "out of range"),
        ("top_p=1.5", "out of range"),
        ("temperature=hot", "is not a number"),
    ):
        with pytest.raises(ConfigurationError, match=message):
            parse_role_sampling(bad, "--search-sampling")


def test_top_k_goes_to_compatible_servers_never_to_openai() -> None:
    assert not accepts_top_k("") and not accepts_top_k("https://api.openai.com/v1")
    assert accepts_top_k("http://localhost:8000/v1")
    assert accepts_top_k("https://openrouter.ai/api/v1")


def test_the_paper_method_defaults_to_table_3_and_no_checks_of_ours() -> None:
    paper = ProfilerContext(method="paper", model="openai:m")
    assert paper.role_sampling("search") == {"temperature": 1.0, "top_p": 0.95, "top_k": 64}
    assert paper.role_sampling("rewrite") == {"temperature": 0.85, "top_p": 0.8, "top_k": 50}
    assert paper.check_citations is False and paper.canon_rule is False
    planned = ProfilerContext(model="openai:m", temperature="strong=0.3")
    assert planned.role_sampling("rewrite") == {"temperature": 0.3}
    assert planned.check_citations is True and planned.canon_rule is True
    opted = ProfilerContext(method="paper", model="openai:m", check_citations=True)
    assert opted.check_citations is True and opted.canon_rule is False

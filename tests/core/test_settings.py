from __future__ import annotations

import pytest

from personae.errors import ConfigurationError
from personae.settings import load_settings


def test_chroma_port_defaults_to_8000_and_reads_the_setting() -> None:
    assert load_settings({}).chroma_port == 8000
    assert load_settings({"CHROMA_PORT": " 8123 "}).chroma_port == 8123


def test_chroma_port_that_int_cannot_read_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="CHROMA_PORT"):
        load_settings({"CHROMA_HOST": "localhost", "CHROMA_PORT": "8²"})  # isdigit, not int()


def test_chroma_port_is_not_checked_without_a_chroma_server() -> None:
    settings = load_settings({"CHROMA_PORT": "eighty", "OPENAI_API_KEY": "sk-x"})
    assert settings.chroma_host is None and settings.openai_api_key == "sk-x"

"""One spelling per wiki address: a trailing slash or a capital in the host is not a new run."""

from __future__ import annotations

import pytest

from personae.urls import same_site_url


@pytest.mark.parametrize(
    ("given", "one"),
    [
        ("https://Hokuto.FANDOM.com/", "https://hokuto.fandom.com"),
        ("HTTPS://hokuto.fandom.com", "https://hokuto.fandom.com"),
        ("http://127.0.0.1:8080/wiki/Kenshiro/", "http://127.0.0.1:8080/wiki/Kenshiro"),
        ("  https://hokuto.fandom.com/api.php  ", "https://hokuto.fandom.com/api.php"),
        ("not a url ", "not a url"),
    ],
)
def test_spellings_of_one_address_are_one(given: str, one: str) -> None:
    assert same_site_url(given) == one

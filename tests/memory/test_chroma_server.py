"""The bookmark bank on a real Chroma server (``CHROMA_HOST``), started on a loopback port.

The server is the ``chroma`` executable installed with chromadb (``store_world``); the tests
skip without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from store_world import CHROMA, running_chroma

from personae.errors import ConfigurationError
from personae.loopback import free_port
from personae.memory.bookmarks.bank import BookmarkBank
from personae.memory.bookmarks.bookmark import BookmarkType
from personae.settings import Settings, load_settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    if not CHROMA.exists():
        pytest.skip("the chroma executable is not installed")
    with running_chroma(tmp_path_factory.mktemp("chroma-server")) as settings:
        yield settings


def test_bank_lives_on_the_server_and_a_new_client_sees_it(
    chroma_server: Settings, tmp_path: Path
) -> None:
    ignored = tmp_path / "ignored"
    bank = BookmarkBank.open("Poppin'Party", ignored, chroma_server)
    bm = bank.create(
        question="Where does the band practise?", type=BookmarkType.STATE, character="Kasumi"
    )
    bm.position, bm.answer = 64, "in the storage room"
    bank.save(bm)
    again = BookmarkBank.open("Poppin'Party", ignored, chroma_server)
    stored = again.get(bm.id)
    assert (stored.position, stored.answer_at(63), stored.answer_at(64)) == (
        64,
        "",
        "in the storage room",
    )
    found = again.candidates(
        "Where does the band practise now?",
        type=BookmarkType.STATE,
        character="Arisa",
        synced_by=100,
    )
    assert [b.id for b in found] == [bm.id]
    assert (
        again.create(question="Who plays guitar?", type=BookmarkType.CONCEPT, character="Tae").id
        == "bm-1"
    )
    assert not ignored.exists(), "with CHROMA_HOST the local memory folder is not used"


def test_unreachable_server_is_a_configuration_error() -> None:
    settings = load_settings({"CHROMA_HOST": "127.0.0.1", "CHROMA_PORT": str(free_port())})
    with pytest.raises(ConfigurationError, match="cannot reach the Chroma server") as caught:
        BookmarkBank.open("haruhi", None, settings)
    assert caught.value.fix and "unset CHROMA_HOST" in caught.value.fix


@pytest.mark.parametrize("port", ["eighty", "0", "70000"])
def test_bad_chroma_port_names_the_setting(port: str) -> None:
    with pytest.raises(ConfigurationError, match="CHROMA_PORT") as caught:
        load_settings({"CHROMA_HOST": "localhost", "CHROMA_PORT": port})
    assert caught.value.fix and "1-65535" in caught.value.fix

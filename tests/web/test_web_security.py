"""`personae web`'s guard: loopback by default, the token elsewhere, the Host header checked."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from personae.errors import InputError
from personae.web.app import create_app
from personae.web.options import WebOptions
from personae.web.security import check_bind, inside, is_loopback


def options(tmp_path: Path) -> WebOptions:
    return WebOptions(
        profiles_dir=tmp_path / "profiles",
        personas_dir=tmp_path / "personas",
        data_dir=tmp_path / "data",
        runs_dir=tmp_path / "runs",
    )


def test_a_rebinding_host_is_refused_and_loopback_names_are_served(tmp_path: Path) -> None:
    client = TestClient(create_app(options(tmp_path)), base_url="http://127.0.0.1:8765")
    assert client.get("/").status_code == 200
    assert client.get("/", headers={"host": "localhost:8765"}).status_code == 200
    refused = client.get("/", headers={"host": "evil.example:8765"})
    assert refused.status_code == 421
    assert "evil.example" in refused.text


def test_with_a_token_every_request_needs_it_and_the_url_token_becomes_a_cookie(
    tmp_path: Path,
) -> None:
    app = create_app(options(tmp_path), token="s3cret", allowed_hosts=("127.0.0.1",))
    client = TestClient(app, base_url="http://127.0.0.1:8765", follow_redirects=False)
    assert client.get("/").status_code == 401
    assert client.get("/?token=wrong").status_code == 401
    entered = client.get("/profiles?token=s3cret")
    assert entered.status_code == 303
    assert entered.headers["location"] == "/profiles"  # the token leaves the address bar
    assert "httponly" in entered.headers["set-cookie"].lower()
    assert client.get("/").status_code == 200  # the cookie now carries it
    bearer = httpx.Headers({"authorization": "Bearer s3cret"})
    fresh = TestClient(app, base_url="http://127.0.0.1:8765")
    assert fresh.get("/", headers=bearer).status_code == 200


def test_listening_beyond_loopback_needs_a_token() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "t")
    with pytest.raises(InputError, match="--token"):
        check_bind("0.0.0.0", None)


def test_inside_follows_links_out_of_the_folders(tmp_path: Path) -> None:
    folder = (tmp_path / "profiles").resolve()
    folder.mkdir()
    (tmp_path / "secret.txt").write_text("x")
    (folder / "link").symlink_to(tmp_path / "secret.txt")
    assert inside(folder / "a" / "profile.json", (folder,))
    assert not inside(folder / ".." / "secret.txt", (folder,))
    assert not inside(folder / "link", (folder,))


def test_a_form_of_another_site_may_not_post_but_the_page_itself_may(tmp_path: Path) -> None:
    client = TestClient(create_app(options(tmp_path)), base_url="http://127.0.0.1:8765")
    form = {"profile": "nobody"}
    evil = client.post("/chat/index", data=form, headers={"origin": "http://evil.example"})
    assert evil.status_code == 403 and "another site" in evil.text
    fetch = {"origin": "null", "sec-fetch-site": "cross-site"}
    assert client.post("/chat/index", data=form, headers=fetch).status_code == 403
    own = client.post("/chat/index", data=form, headers={"origin": "http://127.0.0.1:8765"})
    assert own.status_code == 404 and "no profile &#39;nobody&#39;" in own.text  # reached the page
    assert client.post("/chat/index", data=form).status_code == 404  # no Origin: not a page
    assert client.get("/", headers={"origin": "http://evil.example"}).status_code == 200

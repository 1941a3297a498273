from __future__ import annotations

import httpx

from personae.loopback import LoopbackWebServer, WebRequest, WebResponse


def test_loopback_server_serves_and_records() -> None:
    def route(request: WebRequest) -> WebResponse:
        if request.path == "/search":
            return WebResponse(200, {"echo": request.json()["query"]})
        return WebResponse(404, "<p>missing</p>")

    with LoopbackWebServer(route) as web:
        ok = httpx.post(f"{web.url}/search", json={"query": "Kenshiro"})
        missing = httpx.get(f"{web.url}/nope?a=1", headers={"User-Agent": "UA"})
    assert ok.json() == {"echo": "Kenshiro"}
    assert missing.status_code == 404
    assert [r.path for r in web.requests] == ["/search", "/nope"]
    assert web.requests[1].query == {"a": "1"} and web.requests[1].headers["User-Agent"] == "UA"

"""The web page's test world: the app served on a free loopback port, and a real browser.

The browser is Debian's ``chromium`` driven by Playwright's Python package pointed at the
system executable (nothing is downloaded). Without it the browser tests skip, except under CI
(``CI`` set), where ``.ci/run`` installs it and a missing browser fails the run.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette

CHROMIUM = (
    os.environ.get("PERSONAE_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""The flags this machine's closed network needs (no background connections, no updates)."""

SCREENSHOTS = Path(__file__).resolve().parents[1] / "build" / "web-screenshots"
"""Where the browser tests save their screenshots (build/ is ignored by git)."""


@contextmanager
def serving(app: Starlette) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread on a free loopback port; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the web app did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


def chromium_or_skip() -> str:
    """The browser's executable; skip without it (fail under CI, which installs it)."""
    if Path(CHROMIUM).is_file():
        return CHROMIUM
    message = f"no chromium at {CHROMIUM} (apt-get install chromium)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def browser_page() -> Iterator[Any]:
    """A fresh Playwright page in headless Debian chromium."""
    from playwright.sync_api import sync_playwright

    executable = chromium_or_skip()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            page.set_default_timeout(15_000)
            yield page
        finally:
            browser.close()


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page screenshot as ``build/web-screenshots/NAME.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path

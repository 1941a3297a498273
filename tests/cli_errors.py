"""The CLI's error contract, asserted once: one line, ``personae: error: ...``, no traceback."""

from __future__ import annotations

import re


def assert_one_line_error(err: str, problem: str) -> None:
    """``err`` (captured stderr) is exactly one error line and matches ``problem`` (a regex)."""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("personae: error: "), err
    assert re.search(problem, err), err

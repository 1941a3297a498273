"""Runners: one module per paper job; each runner does a whole job and returns a typed result.

A paper's main jobs live in ``<paper>.py``, its further ones in ``<paper>_<part>.py``
(evaluation, export, votes).

A runner runs, resumes and writes its files; it never prints. The CLI, the MCP server and apps
call these (``from personae import ...``, ``from personae.evals import ...``); each reports its
steps to the one :class:`~personae.progress.Progress` protocol.
"""

from personae.progress import Progress, quiet

__all__ = ["Progress", "quiet"]

"""The CLI's commands, one folder per paper, thin callers where a runner does the job.

Holds: each paper's commands in ``personae/commands/<paper>/`` (the folder is the group
``personae <paper>``; each module's ``register()`` adds its commands and flags under their real
names), ``doctor``, ``serve web|mcp``, and the tree and alias table that assemble them. A
handler goes flags -> run context -> runner (``personae.runners``: bookmarks act, chat, amadeus
index, arcane import, arcane build-arcs, arcane act) -> printed result. Not here: work a library
user needs without the CLI (that belongs in a runner).
"""

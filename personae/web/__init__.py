"""``personae web``: a local web page over the folders Personae writes.

Holds: the Starlette app (:mod:`personae.web.app`), its security rules (loopback by default, a
token for any other host, the Host header checked, files served only from the configured
folders: :mod:`personae.web.security`), one module per view under :mod:`personae.web.pages`
(profiles, new character, chat, arcs, storylines, reports), and the Jinja2 templates and the
little CSS/JavaScript the pages use. Server-rendered, no build step, one process.

Not here: the jobs themselves. Every page calls the public runners (``from personae import
...``), as the CLI and the MCP server do, so a profile made from the page is the same folder
``personae profile`` writes.
"""

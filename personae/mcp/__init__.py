"""Personae over the Model Context Protocol: ``personae mcp`` (stdio or streamable HTTP).

Four tools (``profile_character``, ``ask_character``, ``storyline_memory``, ``arcane_act``) and
read-only resources (existing profiles, indexed personas). Like the CLI, this is an edge: it
builds each graph's run context once, from its options and the settings, and calls the public
API (``from personae import ...``; ``tests/test_layers.py`` ranks it with the commands).
"""

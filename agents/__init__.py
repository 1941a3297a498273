"""LLM roles, not agents: one module per role (proposer, matcher, syncer, actor, searcher, ...).

Holds: each role's prompt, its output schema and the function that calls the model; one
subfolder per paper, roles two papers share at this root.
Not here: HTTP, storage, graph wiring. The agents a user runs (loops of roles and tools) are
the LangGraph graphs in ``personae.graphs``; the word is kept from the design card.
"""

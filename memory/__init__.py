"""What persists: the stores and indexes of the four papers, and their embeddings.

Holds: the bookmark bank, persona and chunk indexes on Chroma, profile, storyline and novel
stores; storage and retrieval, one subfolder per paper, what two papers share (embeddings,
Chroma clients) at this root.
Not here: LLM calls (a store never asks a model), graph wiring.
"""

"""ARCANE: outside-world clients and storyline/novel scanning of this paper (see the README's Layout)."""

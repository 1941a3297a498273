"""ARCANE: LangGraph graphs and their wiring of this paper (see the README's Layout)."""

"""AMADEUS: LLM roles of this paper (see the README's Layout)."""

"""AMADEUS: what persists of this paper (see the README's Layout)."""

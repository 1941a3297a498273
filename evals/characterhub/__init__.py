"""CharacterHub: evaluation protocol of this paper (see the README's Layout)."""

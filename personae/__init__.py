"""Personae: role-playing agents on LangGraph (CharacterHub profiles, BOOKMARKS memory)."""

__version__ = "0.1.0"

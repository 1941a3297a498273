"""The BOOKMARKS commands of the ``personae`` CLI."""

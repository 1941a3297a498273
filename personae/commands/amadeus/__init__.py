"""The AMADEUS commands of the ``personae`` CLI."""

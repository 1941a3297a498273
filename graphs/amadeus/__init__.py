"""AMADEUS: the persona role-play graph and its tool (see the README's Layout).

``personae.graphs.amadeus`` was the graph module before this folder existed: names taken from it
still resolve to :mod:`personae.graphs.amadeus.graph`, with a warning.
"""

from personae.deprecation import package_getattr

__getattr__ = package_getattr("personae.graphs.amadeus", "personae.graphs.amadeus.graph", __path__)

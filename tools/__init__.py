"""Clients for the outside world: web search, wikis, HTTP fetching, storyline and novel scanning.

Holds: the code that talks to what Personae does not own (Tavily, MediaWiki sites, web pages)
and that reads source texts (storylines, novels, persona documents); one subfolder per paper,
clients two papers share at this root.
Not here: the LangChain tools an agent calls (``profile_character``, ``storyline_memory``,
...): each lives beside its graph, in ``graphs/<paper>/tool.py``, and is public as
``personae.create_*_tool``. Nor prompts or graph wiring.
"""

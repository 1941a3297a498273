"""An OpenAI-compatible chat server: every persona and ARCANE character is a model a chat app picks.

Chat front ends (SillyTavern, Open WebUI, LibreChat) and agent stacks speak the OpenAI chat
API. ``personae serve openai`` answers it: ``GET /v1/models`` lists the characters,
``POST /v1/chat/completions`` answers in character (streamed or not) through the same runners
as the CLI (:func:`personae.open_chat`, :func:`personae.act_at_chapter`). The client sends the
whole conversation with every request, so the server keeps no thread.
"""

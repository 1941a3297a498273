"""Runners: one module per paper; each runner does a whole job and returns a typed result.

A runner runs, resumes and writes its files; it never prints. The CLI, the MCP server and apps
call these (``from personae import ...``).
"""

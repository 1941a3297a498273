"""CLI subcommands: one module per top-level command, each with register() and a handler."""

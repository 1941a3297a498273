"""The CLI's commands, one module per command, thin callers where a runner does the job.

Holds: each command's ``register()`` (its flags) and handler: flags -> run context -> runner
(``personae.runners``: act, chat, persona index, novel import, arc build, arcane act) ->
printed result. Not here: work a library user needs without the CLI (that belongs in a runner).
"""

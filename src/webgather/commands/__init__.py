"""Command-line subcommands, one module each.

Each module exposes ``register(subparsers) -> None``, which adds its parser and
sets ``func`` to a callable ``(argparse.Namespace) -> int`` (the exit code).
:mod:`webgather.cli` lists the modules in :data:`COMMAND_MODULES`; a module
that is listed but not yet importable is an error, never silently skipped.
"""

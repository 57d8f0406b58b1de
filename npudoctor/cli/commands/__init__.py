"""CLI command modules.  Each defines ``register(app)`` and keeps its top-level
imports light (typer only): the work happens inside the command functions."""

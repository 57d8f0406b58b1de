"""Renderers of a check result: text (rich), JSON (the public contract), Markdown."""

"""Probes: read the machine through the Host seam, never judge, never import torch.

Each module defines ``SECTION`` (the record it writes), ``NEEDS`` (the sections it
reads through ``ctx.facts``), optional ``QUICK``/``DEEP``/``SLOW`` flags and
``probe(ctx) -> dict`` (see :mod:`npudoctor.engine`).  Modules are discovered
automatically; the run order is derived from ``NEEDS``.
"""

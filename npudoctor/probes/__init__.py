"""Probes: read the machine through the Host seam, never judge, never import torch.

Each module defines ``SECTION``, ``ORDER``, optional ``QUICK``/``DEEP`` flags and
``probe(ctx) -> dict`` (see :mod:`npudoctor.engine`).  Modules are discovered
automatically.
"""

"""Builders of the trees, scenarios, ELF files, venvs and package indexes the tests run on.

Every fixture world is built here from real captures (``../fixtures``, ``../../shared``),
real toolchains (gcc, aarch64-linux-gnu-gcc) and real wheels; the tests import what they
need (``from builders.elfbuild import ElfBuilder``).  The ``build_*_scenarios`` and
``make_*_scenarios`` modules also rewrite the committed scenario folders when run as scripts
(``python tests/builders/build_health_scenarios.py``).
"""

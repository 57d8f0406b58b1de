"""Click, as the installed Typer provides it.

Typer 0.26 and later carry Click inside as ``typer._click``; the newest Typer that installs on
Python 3.8 depends on the ``click`` distribution instead.  The CLI imports Click's names from
here so that both work.
"""

try:
    from typer._click.core import Context
    from typer._click.exceptions import NoSuchOption
except ImportError:  # Typer before 0.26 (Python 3.8): Click is its own distribution
    from click.core import Context  # type: ignore[import-not-found,no-redef,unused-ignore]
    from click.exceptions import NoSuchOption  # type: ignore[import-not-found,no-redef,unused-ignore]

__all__ = ["Context", "NoSuchOption"]

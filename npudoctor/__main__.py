"""``python -m npudoctor``: the same as the ``npudoctor`` command."""

from npudoctor.entry import run

if __name__ == "__main__":
    run()

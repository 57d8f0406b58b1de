"""Imports made while npudoctor waits for a child process.

``check --python`` waits for the target interpreter to answer (docs/performance.md); this
process sleeps in ``poll`` meanwhile.  The modules the rest of the run imports anyway -- the
probe modules still to run, psutil (the ``hccl`` probe's local addresses), the rule modules of the
planned sections -- can be imported in that time by a helper thread: :class:`Warming`.

Why this changes nothing but the wall-clock time:

* an import is the same whichever thread makes it (one module object in ``sys.modules``);
  the helper imports in the order the main thread would (probe order, then the rule
  registry's order), so rules register in the same order;
* the helper runs only while the main thread waits for the child: on leaving the ``with``
  block the main thread asks it to stop and joins it (the import in progress finishes,
  no later one starts), so no import runs beside the main thread's own work and no
  thread outlives the block.  The main thread holds no import lock meanwhile (it is in a
  probe function, not a module body); the join is bounded by :data:`JOIN_TIMEOUT` all the
  same, so a helper stuck on one cannot stop the run;
* a module whose import fails is left out of ``sys.modules`` by Python, so the main
  thread's own import of it fails again there with its own error; the helper swallows
  the failure.
"""

from __future__ import annotations

import importlib
import threading
from types import TracebackType
from typing import Optional, Sequence, Type

#: Seconds the main thread waits for the helper's import in progress (an import of a
#: local module takes milliseconds; the bound only guards against a stuck one).
JOIN_TIMEOUT = 2.0


class Warming:
    """``with Warming(["psutil", "npudoctor.rules.hccl"]): <wait for a child>``: import
    ``names`` in order in a helper thread during the block (see the module docstring).
    ``names`` already imported cost a dictionary lookup each.  Never raises."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _run(self) -> None:
        for name in self.names:
            if self._stop.is_set():
                return
            try:
                importlib.import_module(name)
            except Exception:  # the main thread's own import of it reports it
                continue

    def __enter__(self) -> Warming:
        if self.names:
            try:
                thread = threading.Thread(target=self._run, name="npudoctor-warm", daemon=True)
                thread.start()
            except RuntimeError:  # no thread to be had: the imports happen later, as before
                return self
            self._thread = thread
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(JOIN_TIMEOUT)

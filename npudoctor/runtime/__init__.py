"""The runtime commands: ``health`` (container health check) and ``exec``/``env`` (the
CANN environment of a workload).

- :mod:`~npudoctor.runtime.deadline`: the one deadline mechanism (budget, worker thread,
  killing the commands left behind) and the one text of a blown budget (HOST090);
- :mod:`~npudoctor.runtime.quick`: the one quick evaluation (quick probes + rules);
- :mod:`~npudoctor.runtime.health`: health's contract (exit 0/1 only, cache, verdict);
- :mod:`~npudoctor.runtime.environment`: what set_env.sh would set;
- :mod:`~npudoctor.runtime.exec`: run a command in that environment.

Importing this package imports nothing (``health`` must start fast).
"""

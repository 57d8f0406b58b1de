"""Knowledge: the compatibility matrix, version ordering, finding codes and triage signatures.

Data with provenance, validated by tests and loaded fast at run time. Nothing here reads
the diagnosed machine or judges it.
"""

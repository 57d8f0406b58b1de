"""``npudoctor lint``: find the CUDA-isms in the user's code and launch scripts, with the NPU
fix.  Parse (:mod:`.python` with ``ast``, :mod:`.shell`, notebooks in :mod:`.run`) → rules
from the data of ``knowledge/data/lint.toml`` → :class:`~.model.LintFinding` → :mod:`.report`
(text, JSON, SARIF 2.1.0, GitHub annotations)."""

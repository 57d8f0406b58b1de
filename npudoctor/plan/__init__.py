"""The offline install planner: ``npudoctor plan`` and ``npudoctor plan verify``.

Flow: ``npudoctor collect -o site.json`` on the air-gapped machine →
``npudoctor plan --for site.json`` on a connected machine (:mod:`.resolve` chooses one
consistent set with the matrix, :mod:`.bundle` fetches it with pip and writes the bundle)
→ carry the directory in → ``npudoctor plan verify DIR --for site.json`` (:mod:`.verify`)
and ``bash install.sh`` on the intranet.

Modules: :mod:`.site` (the facts of a snapshot the planner reads), :mod:`.wheels` (which
torch_npu wheels exist), :mod:`.files` (CANN/driver/firmware package file names and
download URLs), :mod:`.resolve`, :mod:`.bundle`, :mod:`.verify`.
"""

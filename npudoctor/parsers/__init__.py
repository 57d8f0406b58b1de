"""Pure parsers of the text formats npudoctor reads (npu-smi tables, info files,
set_env.sh, METADATA, ELF).  No I/O: each takes text (or bytes) and returns data,
and never raises on malformed input."""

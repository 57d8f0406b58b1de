# npudoctor in a container: as a base layer for NPU workloads, or as a side-car.
#
#   docker build -t npudoctor .                                   # slim Python base
#   docker build -t my-cann-app --build-arg BASE_IMAGE=<an official CANN image> .
#   docker build -t npudoctor:nonroot --target nonroot .          # runs as uid 1000 (HwHiAiUser)
#
# The entrypoint applies the CANN environment (what set_env.sh would set), runs the quick
# checks, then execs the command; the HEALTHCHECK marks the container unhealthy when devices,
# driver mounts, chip health or the CANN pairing go wrong (exit 0/1 only).
# Budget and timeouts hold on a saturated node: health answers within its 10 s budget, counted
# from process start (what it could not finish is "unknown", exit 0).  npu-smi gets 85 % of it,
# more than its hang threshold (5 s without an answer: a slow npu-smi, or one waiting for
# another's lock, is not hung), so a wedged driver is seen as a hang (unhealthy), not only as
# "unknown"; Docker's --timeout=15s leaves room for a starved start-up, and --retries=3 needs
# three failures in a row.
ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS root
COPY pyproject.toml README.md /opt/npudoctor-src/
COPY npudoctor /opt/npudoctor-src/npudoctor
COPY matrix /opt/npudoctor-src/matrix
RUN python3 -m pip install --no-cache-dir /opt/npudoctor-src \
    && rm -rf /opt/npudoctor-src
# Bytecode for every module a run imports, npudoctor's and the standard library's (the
# official python images ship the library without .pyc, and pip may be told --no-compile):
# compiled here, as root, it is read by every user the image runs as; a non-root user
# cannot write __pycache__ below /usr and would compile ctypes, difflib... on every run.
# (A file that does not compile, such as a package's Python 2 leftovers, is listed and
# skipped: it can never be imported, so it needs no bytecode.)
RUN python3 -c 'import compileall, os, sys; [compileall.compile_dir(p, quiet=1, workers=0) for p in sys.path if os.path.isdir(p)]'
# check's file-facts cache (package-directory walks, RECORD facts, ELF facts) filled here,
# so that the first check in a new container walks no package tree again: its entries are
# keyed by path, size and mtime (no inode; the whole-second mtimes of the image's layers
# match), and a file changed since is read again.  Read-only for the users the image runs
# as (a run keeps nothing new there; `npudoctor matrix refresh` needs another
# NPUDOCTOR_CACHE_DIR).  Exit 1 (errors found, e.g. no NPU on the build machine) is a
# result, not a failure of the build.
ENV NPUDOCTOR_CACHE_DIR=/var/cache/npudoctor
RUN npudoctor check --json >/dev/null; [ "$?" -le 1 ] && chmod -R a+rX /var/cache/npudoctor
HEALTHCHECK --interval=30s --timeout=15s --start-period=60s --retries=3 \
    CMD ["npudoctor", "health", "--exec-env", "--timeout", "10"]
ENTRYPOINT ["npudoctor", "exec", "--"]
CMD ["bash"]

# Same image, running as a non-root account that can open /dev/davinci* (the driver's
# HwHiAiUser, uid/gid 1000 on the host; the uid must exist in /etc/passwd here).
FROM root AS nonroot
ARG NPU_UID=1000
ARG NPU_GID=1000
RUN (getent group "${NPU_GID}" >/dev/null || groupadd -g "${NPU_GID}" HwHiAiUser) \
    && (getent passwd "${NPU_UID}" >/dev/null || useradd -l -m -u "${NPU_UID}" -g "${NPU_GID}" HwHiAiUser)
USER ${NPU_UID}:${NPU_GID}

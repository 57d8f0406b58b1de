#!/bin/sh
# Gather one npudoctor snapshot per node of a Slurm allocation and compare them.
#
#   salloc -N 16 deploy/slurm/npudoctor-gather.sh [OUTDIR]
#   sbatch -N 16 --wrap "deploy/slurm/npudoctor-gather.sh /shared/npudoctor-$(date +%F)"
#
# One task per node runs `npudoctor collect -o -`; srun --label prefixes every line with the
# task id, so the snapshots are separated again here (no shared file system is needed),
# written to OUTDIR/task-<id>.json and passed to `npudoctor compare`.  The exit code is
# compare's: 0 no drift, 1 drift (or a node that returned no snapshot), 2 usage.
#
# Environment: NPUDOCTOR (default "npudoctor"), NPUDOCTOR_COLLECT_ARGS (extra collect
# arguments, e.g. "--no-redact"), SRUN (default "srun"), SRUN_ARGS (extra srun arguments).

set -u
NPUDOCTOR="${NPUDOCTOR:-npudoctor}"
SRUN="${SRUN:-srun}"
OUT="${1:-npudoctor-snapshots-${SLURM_JOB_ID:-manual}}"
mkdir -p "$OUT" || exit 2
rm -f "$OUT"/task-*.json

# shellcheck disable=SC2086,SC2016  # word lists on purpose; $vars expand in the task's shell
$SRUN --label --ntasks-per-node=1 --kill-on-bad-exit=0 ${SRUN_ARGS:-} \
    sh -c '$0 collect -o - ${NPUDOCTOR_COLLECT_ARGS:-}' "$NPUDOCTOR" |
    awk -v out="$OUT" '
        match($0, /^ *[0-9]+: /) {
            id = substr($0, 1, RLENGTH - 2); gsub(/ /, "", id)
            file = out "/task-" id ".json"
            print substr($0, RLENGTH + 1) > file
        }'

# shellcheck disable=SC2086
exec $NPUDOCTOR compare "$OUT"

#!/bin/sh
# npudoctor as a Slurm HealthCheckProgram or an NHC check.
#
# slurm.conf:
#   HealthCheckProgram=/usr/local/sbin/npudoctor-healthcheck.sh
#   HealthCheckInterval=300
#   HealthCheckNodeState=IDLE        # do not disturb running jobs
# NHC (/etc/nhc/nhc.conf):
#   * || check_cmd_status -t 60 -r 0 /usr/local/sbin/npudoctor-healthcheck.sh
#
# Runs `npudoctor npd` (exit 0 OK, 1 problem, 2 unknown; one line of <= 80 bytes).
# On a problem it drains this node with the message as the reason (unless
# NPUDOCTOR_DRAIN=0, e.g. under NHC, which drains by itself) and exits 1.  "Unknown" (npudoctor
# could not tell) never drains: it is logged and the script exits 0.
#
# The node is judged in the environment its CANN set_env.sh would set (slurmd's own environment
# never has it); "not checked" (e.g. no npu-smi on PATH) is unknown unless NPUDOCTOR_ARGS has
# "--require-checked devices".
#
# Environment: NPUDOCTOR (the command, default "npudoctor"), NPUDOCTOR_TIMEOUT (seconds,
# default 50), NPUDOCTOR_PYTHON (the jobs' Python interpreter, passed as --python; default:
# the one npudoctor finds), NPUDOCTOR_ARGS (extra `npd` arguments, e.g. "--ignore HCCL013"),
# NPUDOCTOR_DRAIN (1/0, default 1), SLURMD_NODENAME (set by slurmd; else `hostname -s`).

NPUDOCTOR="${NPUDOCTOR:-npudoctor}"
TIMEOUT="${NPUDOCTOR_TIMEOUT:-50}"
NODE="${SLURMD_NODENAME:-$(hostname -s)}"

if [ -n "${NPUDOCTOR_PYTHON:-}" ]; then
    set -- --python "$NPUDOCTOR_PYTHON"
else
    set --
fi
# shellcheck disable=SC2086  # NPUDOCTOR and NPUDOCTOR_ARGS are word lists on purpose
message=$($NPUDOCTOR npd --timeout "$TIMEOUT" "$@" ${NPUDOCTOR_ARGS:-} 2>/dev/null)
rc=$?

case "$rc" in
0)
    exit 0
    ;;
1)
    reason="npudoctor: ${message:-problem found}"
    echo "$reason" >&2
    if [ "${NPUDOCTOR_DRAIN:-1}" = "1" ] && command -v scontrol >/dev/null 2>&1; then
        scontrol update NodeName="$NODE" State=DRAIN Reason="$reason"
    fi
    exit 1
    ;;
*)
    echo "npudoctor: unknown (exit $rc): ${message:-no answer}" >&2
    if command -v logger >/dev/null 2>&1; then
        logger -t npudoctor-healthcheck "unknown (exit $rc): ${message:-no answer}"
    fi
    exit 0
    ;;
esac

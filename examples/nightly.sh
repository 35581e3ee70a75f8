#!/bin/bash
# Nightly qualification of one drive on a test rig: run from cron or a systemd
# timer, never prompts, and leaves one run directory per night.
#
#   examples/nightly.sh TARGET RESULTS_DIR [tkbench run options...]
#
# TARGET is what `tkbench run --target` takes (/dev/nvme1n1, a file, nbd://...).
# Environment (all optional):
#   PROFILE    profile name or path              (default pts-e)
#   CONFIRM    serial or kernel name of a block device; without it the target
#              is confirmed with --yes, which tkbench accepts for files and NBD only
#   THRESHOLD  regression threshold in %, against the previous run of the same
#              drive in the history                (default 10; 0 = no check)
#   TKBENCH    the tkbench command                 (default tkbench)
#
# What it does:
#   * the newest RESULTS_DIR/run-* that is not complete (the rig crashed or
#     rebooted, the run was stopped) is resumed: `tkbench run --resume`, which
#     keeps the finished tests and the interrupted test's rounds and, after the
#     idle, preconditions that test again (write saturation: starts it over;
#     docs/resume.md); so is one that completed its rounds but was stopped
#     before its checks were written (no checks.json): the resume writes
#     nothing to the drive and makes the checks, the report and the history
#     entry;
#   * otherwise a new RESULTS_DIR/run-YYYYmmdd-HHMMSS starts with the options
#     given after RESULTS_DIR;
#   * either way the JSON summary goes to RUN/summary.json, the PASS/FAIL checks
#     to RUN/junit.xml for the CI server, and the PDF report to RUN/report.pdf;
#   * the exit code is tkbench's: 0 passed, 1 a check or regression failed,
#     2 bad input, 3 refused by a safety check, 4 device or fio failure,
#     5 internal error, 130 interrupted (run the script again to resume).
#
# crontab line for 01:30 every night:
#   30 1 * * *  CONFIRM=S6XYNA0W123456 /opt/tkbench/examples/nightly.sh /dev/nvme1n1 /srv/qual >>/srv/qual/nightly.log 2>&1
set -u

if [ $# -lt 2 ]; then
    echo "usage: $0 TARGET RESULTS_DIR [tkbench run options...]" >&2
    exit 2
fi
target=$1
results=$2
shift 2
tkbench=${TKBENCH:-tkbench}
mkdir -p "$results" || exit 2

if [ -n "${CONFIRM:-}" ]; then
    confirm=(--confirm "$CONFIRM")
else
    confirm=(--yes)
fi

status_of() {  # the status in a run's manifest, or "unreadable"
    "$tkbench" show --json "$1" 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])' 2>/dev/null ||
        echo unreadable
}

unfinished() {  # not complete, or complete but stopped before its checks were made
    local status
    status=$(status_of "$1")
    [ "$status" != unreadable ] && { [ "$status" != complete ] || [ ! -e "$1/checks.json" ]; }
}

last=$(find "$results" -maxdepth 1 -name 'run-*' -type d | sort | tail -n 1)
if [ -n "$last" ] && unfinished "$last"; then
    run=$last
    echo "$(date -Is) nightly: resuming $run"
    args=(run --resume "$run" --target "$target")
else
    run=$results/run-$(date +%Y%m%d-%H%M%S)
    echo "$(date -Is) nightly: starting $run"
    args=(run --profile "${PROFILE:-pts-e}" --target "$target" --out "$run" "$@")
fi

# tkbench runs in the background so that a signal sent to this script alone (a
# `timeout`, a kill by PID) is passed on; tkbench then stops fio, marks the run
# interrupted and exits 130.  A signal to the whole group (Ctrl-C, systemd)
# reaches tkbench directly; the one passed on is then ignored.
"$tkbench" "${args[@]}" "${confirm[@]}" --json --junit "$run/junit.xml" \
    --regression-threshold "${THRESHOLD:-10}" >"$run.summary.json.part" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
wait "$child"
code=$?
while kill -0 "$child" 2>/dev/null; do  # the wait was cut short by a signal
    wait "$child"
    code=$?
done
trap - TERM INT HUP
if [ -s "$run.summary.json.part" ] && [ -d "$run" ]; then
    mv "$run.summary.json.part" "$run/summary.json"
else
    rm -f "$run.summary.json.part"
fi

case $code in
    0) verdict="passed" ;;
    1) verdict="FAILED a check or a regression" ;;
    2) verdict="bad input" ;;
    3) verdict="refused by a safety check" ;;
    4) verdict="device or fio failure" ;;
    5) verdict="internal error in tkbench (traceback in the run's events.log)" ;;
    130) verdict="interrupted; run this script again to resume" ;;
    *) verdict="unexpected exit code" ;;
esac
echo "$(date -Is) nightly: $run: exit $code, $verdict"
exit $code

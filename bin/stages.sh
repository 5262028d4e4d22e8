# Timed stages for .ci/run (sourced): each stage prints its wall time as it ends, and the table of
# all stages is printed when the script exits, failed or not.
#
#   stage NAME COMMAND...    run COMMAND in the foreground
#   start NAME COMMAND...    run COMMAND in the background, its output kept in var/ci/ (a file named
#                            after NAME up to its first " (")
#   finish NAME...           wait for background stages; print each one's log once it has ended
#
# A stage that fails fails the script (after every stage started beside it has ended).

STAGES_DIR=${STAGES_DIR:-var/ci}
_now_us() { echo "${EPOCHREALTIME/./}"; }
_since() { echo $((($(_now_us) - $1) / 1000000)); }  # whole seconds since a _now_us
STAGES_STARTED=$(_now_us)
declare -a STAGE_ROWS=()
declare -A STAGE_PID=() STAGE_T0=()
mkdir -p "$STAGES_DIR"

_stage_log() {  # NAME: where a background stage's output goes
  local short=${1%% (*}
  echo "$STAGES_DIR/${short//[^A-Za-z0-9_.-]/_}.log"
}

_stage_ended() {  # NAME SECONDS STATUS
  local verdict="ok"
  [ "$3" = 0 ] || verdict="FAILED (exit $3)"
  STAGE_ROWS+=("$(printf '%-58s %6d s  %s' "$1" "$2" "$verdict")")
  echo "== $1: ended after $2 s, $verdict"
}

stage() {
  local name=$1 t0 status=0
  t0=$(_now_us)
  shift
  echo "== $name"
  "$@" || status=$?
  _stage_ended "$name" "$(_since "$t0")" "$status"
  return "$status"
}

start() {
  local name=$1
  shift
  local log
  log=$(_stage_log "$name")
  echo "== $name: started in the background (log: $log)"
  STAGE_T0[$name]=$(_now_us)
  # Its exit status and the moment it ended, for finish (which may come to it much later).
  {
    local status=0 t0=${STAGE_T0[$name]}
    "$@" >"$log" 2>&1 || status=$?
    echo "$status $(_now_us)" >"$log.end"
    echo "== $name: ended after $(_since "$t0") s (exit $status); its output follows below"
  } &
  STAGE_PID[$name]=$!
}

finish() {
  local failed=0 name log status ended
  for name in "$@"; do
    log=$(_stage_log "$name")
    wait "${STAGE_PID[$name]}" || true
    read -r status ended <"$log.end" || { status=1; ended=$(_now_us); }
    echo "== $name: its output"
    cat "$log"
    _stage_ended "$name" $(((ended - STAGE_T0[$name]) / 1000000)) "$status"
    [ "$status" = 0 ] || failed=1
  done
  return "$failed"
}

stop_background() {  # what a failed stage left running beside it, with all its descendants
  local pid pids=""
  for pid in $(jobs -pr); do
    pids+=" $(_tree "$pid")"
  done
  [ -n "${pids// /}" ] || return 0
  # Frozen first, so that no parent carries on to its next command when its child is gone.
  # shellcheck disable=SC2086
  { kill -STOP $pids; kill -TERM $pids; kill -CONT $pids; } 2>/dev/null || true
}

_tree() {  # a process and its descendants
  local child
  echo "$1"
  for child in $(pgrep -P "$1"); do
    _tree "$child"
  done
}

stage_table() {
  echo
  echo "== stages (wall time in seconds; a stage started in the background ran beside the stages after it)"
  printf '%s\n' "${STAGE_ROWS[@]}"
  printf '%-58s %6d s\n' "total" "$(_since "$STAGES_STARTED")"
}

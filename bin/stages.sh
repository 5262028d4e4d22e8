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
  echo "== $name: started in the background (log: $(_stage_log "$name"))"
  STAGE_T0[$name]=$(_now_us)
  "$@" >"$(_stage_log "$name")" 2>&1 &
  STAGE_PID[$name]=$!
}

finish() {
  local failed=0 name status
  for name in "$@"; do
    status=0
    wait "${STAGE_PID[$name]}" || status=$?
    echo "== $name: its output"
    cat "$(_stage_log "$name")"
    _stage_ended "$name" "$(_since "${STAGE_T0[$name]}")" "$status"
    [ "$status" = 0 ] || failed=1
  done
  return "$failed"
}

stop_background() {  # what a failed stage left running beside it, and its children
  local pid
  for pid in $(jobs -pr); do
    pkill -TERM -P "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
  done
}

stage_table() {
  echo
  echo "== stages (wall time in seconds; a stage started in the background ran beside the stages after it)"
  printf '%s\n' "${STAGE_ROWS[@]}"
  printf '%-58s %6d s\n' "total" "$(_since "$STAGES_STARTED")"
}

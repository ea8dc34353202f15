# common.sh - sourced by the simulated tools (bash). Kept cheap: no external
# programs except (for --query-gpu) one `awk`: files are printed with sim_cat, delays
# are sim_sleep's, both builtins only; a hanging
# nvidia-smi (smi_hang) is `timeout` + `tail`. The host's mutable state
# (`simfleet set`, DIR/<host>/state/health) is read with bash builtins only.
# The sshd of each simulated host sets GPUFLEET_SIM_DIR and GPUFLEET_SIM_HOST
# (sshd_config SetEnv); they select this host's files.
export LC_ALL=C
if [[ -z ${GPUFLEET_SIM_DIR:-} || -z ${GPUFLEET_SIM_HOST:-} ]]; then
  echo "simfleet: GPUFLEET_SIM_DIR/GPUFLEET_SIM_HOST not set (not on a simulated host?)" >&2
  exit 127
fi
SIM_H=$GPUFLEET_SIM_DIR/$GPUFLEET_SIM_HOST
# shellcheck disable=SC1091
. "$SIM_H/env"            # SIM_PROFILE SIM_P SIM_DELAY SIM_WORKLOAD SIM_SLOW SIM_HANG
. "$SIM_P/profile.env"    # SIM_NVSMI SIM_DOCKER SIM_DCGM SIM_NGPU SIM_MODEL SIM_DRIVER SIM_DIGESTS SIM_CUDA

# ---- mutable health state (simfleet set) --------------------------------------
# DIR/<host>/state/health: "key=value" (every GPU) or "key.N=value" (GPU N, its
# index in the profile) lines, replaced atomically by `simfleet set`. No file =
# the profile's static outputs. sim_state loads it into ST (builtins only) and
# sets SIM_GONE (",3,5," for gpu_gone=3,5; "" when none).
declare -A ST=()
SIM_GONE=
sim_state() {
  local l g
  [[ -f $SIM_H/state/health ]] || return 1
  while IFS= read -r l; do [[ $l == ?*=* ]] && ST[${l%%=*}]=${l#*=}; done < "$SIM_H/state/health"
  g=${ST[gpu_gone]:-}
  [[ -z $g ]] || SIM_GONE=",$g,"
  return 0
}
# sim_val KEY IDX -> REPLY: GPU IDX's value (key.IDX, else key); 1 when unset
sim_val() {
  if [[ -n ${ST[$1.$2]+x} ]]; then REPLY=${ST[$1.$2]}
  elif [[ -n ${ST[$1]+x} ]]; then REPLY=${ST[$1]}
  else return 1; fi
}
sim_gone() { [[ -n $SIM_GONE && $SIM_GONE == *",$1,"* ]]; }

# sim_json_str STR -> sets REPLY to the JSON string literal of STR
sim_json_str() {
  local s=$1 out c i
  s=${s//\\/\\\\}; s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}; s=${s//$'\r'/\\r}; s=${s//$'\t'/\\t}
  if [[ $s == *[[:cntrl:]]* ]]; then
    out=
    for ((i = 0; i < ${#s}; i++)); do
      c=${s:i:1}
      if [[ $c == [[:cntrl:]] ]]; then printf -v c '\\u%04x' "'$c"; fi
      out+=$c
    done
    s=$out
  fi
  REPLY="\"$s\""
}

# sim_log ARGV... -> one JSON array per call appended to DIR/<host>/argv.log
sim_log() {
  [[ -n ${GPUFLEET_SIM_INNER:-} ]] && return 0
  local a line=
  for a; do sim_json_str "$a"; line+=${line:+,}$REPLY; done
  printf '[%s]\n' "$line" >> "$SIM_H/argv.log"
  # up --times: the same line with the call's wall-clock time (bench/monitor)
  if [[ ${SIM_TIMES:-0} == 1 ]]; then printf '%s [%s]\n' "$EPOCHREALTIME" "$line" >> "$SIM_H/argv.times"; fi
}

# sim_cat FILE: prints FILE (a text file, no NUL bytes) as `cat FILE` would, with builtins
# (the exec of a cat costs more CPU than the read); a file it cannot read goes to cat
sim_cat() {
  local t=
  [[ -f $1 && -r $1 ]] || { cat -- "$1"; return; }
  IFS= read -r -d '' t < "$1" || true
  printf '%s' "$t"
}

# sim_sleep S: waits S seconds. A read with a timeout on the fleet's FIFO (DIR/sleep.fifo,
# made by up, never written), opened read-write so that the open does not block, is a
# sleep without starting a program; without the FIFO, sleep.
sim_sleep() {
  [[ $1 == 0 || $1 == 0.0 || -n ${GPUFLEET_SIM_INNER:-} ]] && return 0
  if [[ -p $GPUFLEET_SIM_DIR/sleep.fifo ]]; then
    read -r -t "$1" _ <> "$GPUFLEET_SIM_DIR/sleep.fifo"
    return 0
  fi
  sleep "$1"
}

# every tool of a `hang` host blocks far longer than any sane timeout
sim_hang_check() { [[ $SIM_PROFILE == hang ]] && exec sleep "$SIM_HANG"; return 0; }

# a tool that hangs until --hang runs out OR its SSH channel is closed: GNU
# `tail -f` polls its stdout (once a second) and exits when the reader of
# that pipe (sshd's end of the channel) is gone; `timeout` ends it after
# SIM_HANG seconds. Prints nothing.
sim_hang_until_closed() { exec timeout "$SIM_HANG" tail -f /dev/null; }

sim_unsupported() {
  echo "simfleet: unsupported $SIM_TOOL invocation:$(printf ' %q' "$@") (see tests/fleet/README.md)" >&2
  exit 2
}

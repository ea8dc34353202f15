# light.sh - sourced by the light simulated tools (simfleet up --light), POSIX sh (dash).
# A light tool answers exactly the invocations the health monitor's sample command makes
# (provisioner/monitor/monitor_sample.c) from an output rendered once per host by the full bash
# tool (tests/fleet/tools/, run with GPUFLEET_SIM_INNER=1 on the host's first such call,
# cached in DIR/<host>/state/light/), after sleeping the host's delay. Any other
# invocation, and any call whose full answer was not a plain success, runs the full tool.
# What a light host does not simulate: `simfleet set` state and kernel log appends
# (`simfleet kmsg`/`xid`) made after a cached answer: journalctl --after-cursor=C answers
# "no new entries" with cursor C (see tests/fleet/README.md).
LC_ALL=C
export LC_ALL
L_D=$GPUFLEET_SIM_DIR
L_H=$L_D/$GPUFLEET_SIM_HOST
L_C=$L_H/state/light
# shellcheck disable=SC1091 # the host's env (KEY=VALUE lines, written by simfleet up)
. "$L_H/env"

# light_full TOOL ARGS...: the full tool, DIR/bin/TOOL (light hosts are only those whose
# PATH starts with DIR/bin, see lib/host-setup); by its path, never through PATH, which
# would find this light tool again
light_full() {
  l_tool=$1
  shift
  exec "$L_D/bin/$l_tool" "$@"
}

# light_log TOOL ARGS...: argv.log (and argv.times under up --times) as the full tools
# write them; the arguments of the fast paths hold no '"' or '\'
light_log() {
  l_line=
  for l_a; do l_line="$l_line${l_line:+,}\"$l_a\""; done
  printf '[%s]\n' "$l_line" >> "$L_H/argv.log"
  if [ "${SIM_TIMES:-0}" = 1 ]; then
    # wall clock without a fork: /proc/uptime (1/100 s) + the offset taken at up
    read -r l_up _ < /proc/uptime
    l_t=$((${l_up%.*}${l_up#*.} + SIM_UPOFF_CS))
    printf '%d.%02d0000 [%s]\n' $((l_t / 100)) $((l_t % 100)) "$l_line" >> "$L_H/argv.times"
  fi
}

light_sleep() { case $SIM_DELAY in 0 | 0.0 | '') ;; *) sleep "$SIM_DELAY" ;; esac; }

# light_cached KEY TOOL ARGS...: KEY's cached answer to exactly ARGS (rendered now when
# missing or for other ARGS); the full tool when its answer is not exit 0 without stderr.
# The answer is kept as a shell assignment (L_OUT='...') and printed with the builtin
# printf: a process start costs about 10 ms of CPU here, a cat would be one more.
light_cached() {
  l_k=$1
  shift
  l_args="$*"
  l_have=
  [ -f "$L_C/$l_k.args" ] && read -r l_have < "$L_C/$l_k.args"
  if [ "$l_have" != "$l_args" ] || [ ! -f "$L_C/$l_k.sh" ]; then
    mkdir -p "$L_C"
    l_tool=$1
    shift
    if GPUFLEET_SIM_INNER=1 "$L_D/bin/$l_tool" "$@" > "$L_C/$l_k.out.$$" 2> "$L_C/$l_k.err.$$" &&
      [ ! -s "$L_C/$l_k.err.$$" ]; then
      { printf "L_OUT='"; sed "s/'/'\\\\''/g" "$L_C/$l_k.out.$$"; printf "'\\n"; } > "$L_C/$l_k.sh.$$"
      printf '%s\n' "$l_args" > "$L_C/$l_k.args.$$"
      mv -f "$L_C/$l_k.sh.$$" "$L_C/$l_k.sh"
      mv -f "$L_C/$l_k.args.$$" "$L_C/$l_k.args"
      rm -f "$L_C/$l_k.out.$$" "$L_C/$l_k.err.$$"
    else
      rm -f "$L_C/$l_k.out.$$" "$L_C/$l_k.err.$$"
      light_full "$l_tool" "$@"
    fi
    set -- "$l_tool" "$@"
  fi
  light_log "$@"
  # shellcheck disable=SC1090 # the cached answer, written above
  . "$L_C/$l_k.sh"
  light_sleep
  printf '%s' "$L_OUT"
  exit 0
}

# kmsg-import.awk - kernel log text (as dmesg, dmesg -T/--time-format iso/-x,
# syslog, journalctl short/short-iso/short-monotonic print it, or bare
# messages) -> one kernel record per output line: "PRIO TAB TEXT", the lines
# of a multi-line record joined by \037. Used by `simfleet kmsg` / `xid`.
#   -v gpus=FILE   the host's gpus.tsv (index, uuid, pci.bus_id, serial columns)
#   -v start=N     first GPU for addresses that are not the host's (default 0)
#   -v force=1     map every address, the host's too, from GPU start on
#   -v raw=1       keep every address, UUID and serial as written
#   ENVIRON["KGREP"]  keep only records matching this ERE (after merging)
# Prefixes (time stamps, "host kernel: ", "kern  :warn  : ") are dropped: the
# record gets the host's own time when it is appended. A line without a prefix
# that starts with blanks continues the previous record (dmesg's multi-line
# messages); so does a line with the same "[sec.usec]" stamp as the previous
# one (syslog repeats the stamp on each line of one record).
# Addresses: each distinct PCI address "dddd:bb:dd[.f]" of a record that does
# not mention an NVSwitch is mapped onto the host's GPUs (an address the host
# has stays unless force=1; the k-th other one becomes GPU start+k); the
# "GPU-<uuid>" and serial numbers of a record become those of the GPU of that
# record's address (or of the last address seen, for lines such as "GPU Board
# Serial Number: ..." that name none).
function lvl(s) {
  return s == "emerg" ? 0 : s == "alert" ? 1 : s == "crit" ? 2 : s == "err" ? 3 : \
    s == "warn" ? 4 : s == "notice" ? 5 : s == "info" ? 6 : s == "debug" ? 7 : 4
}
function flush() {
  if (have && (ENVIRON["KGREP"] == "" || rec ~ ENVIRON["KGREP"])) { out[nout++] = prio "\t" rec }
  have = 0; rec = ""
}
function sub_rec(t,   r, a, key, k, first, u, i) {
  if (raw || tolower(t) ~ /nvswitch/) return t
  r = ""; first = ""
  while (match(t, /[0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F]:[0-9a-fA-F][0-9a-fA-F]:[0-9a-fA-F][0-9a-fA-F]/)) {
    a = substr(t, RSTART, RLENGTH); key = tolower(a)
    if ((key in hostaddr) && !force) k = hostaddr[key]
    else {
      if (!(key in map)) { map[key] = (start + nmap) % ngpu; nmap++ }
      k = map[key]; a = addr[k]
    }
    if (first == "") first = k
    r = r substr(t, 1, RSTART - 1) a; t = substr(t, RSTART + RLENGTH)
  }
  t = r t
  if (first == "") first = cur; else cur = first
  if (first == "") return t
  # the UUID and serial of that GPU
  r = ""
  while (match(t, /GPU-[0-9a-fA-F][0-9a-fA-F-]*[0-9a-fA-F]/)) {
    r = r substr(t, 1, RSTART - 1) uuid[first]; t = substr(t, RSTART + RLENGTH)
  }
  t = r t
  for (i = 1; i <= 2; i++) {
    u = (i == 1) ? "Serial Number: " : "serial number is "
    if ((k = index(t, u)) && match(substr(t, k + length(u)), /^[0-9A-Za-z]+/))
      t = substr(t, 1, k + length(u) - 1) serial[first] substr(t, k + length(u) + RLENGTH)
  }
  return t
}
BEGIN {
  FS = "\t"; ngpu = 0
  if (gpus != "") {
    if ((getline l < gpus) > 0) {
      n = split(l, h, "\t")
      for (i = 1; i <= n; i++) { k = h[i]; sub(/ \[.*\]$/, "", k); c[k] = i }
    }
    while ((getline l < gpus) > 0) {
      split(l, f, "\t"); g = f[c["index"]] + 0
      addr[g] = tolower(substr(f[c["pci.bus_id"]], 5, 10)); hostaddr[addr[g]] = g
      uuid[g] = f[c["uuid"]]; serial[g] = f[c["serial"]]; ngpu++
    }
  }
  if (ngpu == 0) raw = 1
  start += 0; force += 0; have = 0; lastts = ""; cur = ""
}
{
  l = $0; sub(/\r$/, "", l); p = 4; ts = ""; pref = 0
  if (match(l, /^[A-Z][a-z][a-z] [ 0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9] [^ ]+ kernel: /) ||
      match(l, /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9:.]+[+-][0-9][0-9][0-9][0-9] [^ ]+ kernel: /) ||
      match(l, /^\[ *[0-9]+\.[0-9]+\] [^ ]+ kernel: /)) { l = substr(l, RLENGTH + 1); pref = 1 }
  if (match(l, /^[a-z]+ *:[a-z]+ *: /)) {
    d = substr(l, 1, RLENGTH); l = substr(l, RLENGTH + 1); pref = 1
    sub(/^[a-z]+ *:/, "", d); sub(/ *: $/, "", d); p = lvl(d)
  }
  if (match(l, /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9],[0-9]+[+-][0-9][0-9]:[0-9][0-9] /) ||
      match(l, /^\[[A-Z][a-z][a-z] [A-Z][a-z][a-z] [ 0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9] [0-9]+\] /)) {
    l = substr(l, RLENGTH + 1); pref = 1
  }
  if (match(l, /^\[ *[0-9]+\.[0-9]+\] /)) { ts = substr(l, 1, RLENGTH); gsub(/[][ ]/, "", ts); l = substr(l, RLENGTH + 1); pref = 1 }
  if (match(l, /^kernel: /)) { l = substr(l, RLENGTH + 1); pref = 1 }
  if (l ~ /^[ \t]*$/) next
  if (have && ((!pref && l ~ /^[ \t]/) || (ts != "" && ts == lastts))) {
    sub(/^[ \t]+/, "", l); rec = rec "\037" l; next
  }
  flush(); sub(/^[ \t]+/, "", l)
  rec = l; prio = p; have = 1; lastts = ts
}
END {
  flush()
  for (i = 0; i < nout; i++) {
    split(out[i], x, "\t"); t = substr(out[i], length(x[1]) + 2)
    print x[1] "\t" sub_rec(t)
  }
}

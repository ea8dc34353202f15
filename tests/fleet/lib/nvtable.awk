# nvtable.awk - parse / render the nvidia-smi default table (driver >= 550 layout, 89 columns).
#   mode=parse:  reads a default-table fixture, prints one TSV record per GPU:
#                idx name pers bus disp ecc fan temp perf pwr cap used total util compute mig
#   mode=render: reads such TSV records, prints the full default table.
#                -v smi=<nvidia-smi version> -v drv=<driver version> -v cuda=<cuda version>
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
function sep() { print "+-----------------------------------------+------------------------+----------------------+" }
BEGIN {
  if (mode == "render") FS = "\t"
}
mode == "parse" {
  if ($0 ~ /^\|[ ]+[0-9]+  / && $0 !~ /MiB/) {
    n = split($0, c, "|"); left = c[2]
    idx = trim(substr(left, 1, 4)); rest = trim(substr(left, 5))
    pers = rest; sub(/.* /, "", pers); name = trim(substr(rest, 1, length(rest) - length(pers)))
    split(trim(c[3]), b, / +/); ecc = trim(c[4])
    getline; split($0, d, "|")
    fan = trim(substr(d[2], 2, 3)); split(trim(substr(d[2], 5)), w, / +/)
    split(trim(d[3]), m, / +/); split(trim(d[4]), u, / +/)
    getline; split($0, e, "|"); mig = trim(e[4])
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", \
      idx, name, pers, b[1], b[2], ecc, fan, w[1], w[2], w[3], w[5], m[1], m[3], u[1], u[2], mig
  }
}
mode == "render" { rec[++nrec] = $0 }
END {
  if (mode != "render") exit
  print "+-----------------------------------------------------------------------------------------+"
  printf "| NVIDIA-SMI %-23sDriver Version: %-15sCUDA Version: %-9s|\n", smi, drv, cuda
  print "|-----------------------------------------+------------------------+----------------------+"
  print "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |"
  print "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |"
  print "|                                         |                        |               MIG M. |"
  print "|=========================================+========================+======================|"
  for (i = 1; i <= nrec; i++) {
    split(rec[i], f, "\t")
    np = sprintf("%-*s%s", 33 - length(f[3]), f[2], f[3])
    printf "| %3s  %s  |   %s %3s | %20s |\n", f[1], np, f[4], f[5], f[6]
    printf "|%4s%6s%6s%16s / %5s |%11s / %9s |%8s%13s |\n", f[7], f[8], f[9], f[10], f[11], f[12], f[13], f[14], f[15]
    printf "|                                         |                        | %20s |\n", f[16]
    sep()
  }
  printf "%89s\n", ""
  print "+-----------------------------------------------------------------------------------------+"
  print "| Processes:                                                                              |"
  print "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |"
  print "|        ID   ID                                                               Usage      |"
  print "|=========================================================================================|"
  print "|  No running processes found                                                             |"
  print "+-----------------------------------------------------------------------------------------+"
}

/* parse_storage.h — the storage reference's tools: GNU dd's summary line and fio's JSON
 * output (fixtures: tests/fixtures/perf/, SOURCES.md §4). Pure C, no I/O; the bytes need
 * not be NUL-terminated and nothing past len is read. Rates are MB/s (10^6 bytes/s). */
#ifndef GPUFLEET_PARSE_STORAGE_H
#define GPUFLEET_PARSE_STORAGE_H

#include <stddef.h>

/* The last "copied" line of dd (its final summary, or the last status=progress update;
 * lines end in \n or \r):
 *   "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.497434 s, 2.2 GB/s"
 *   "3 bytes copied, 9.44e-05 s, 31.8 kB/s"          (no parenthetical under 1 kB)
 *   "555319296 bytes (555 MB, 530 MiB) copied, 11 s, 50,5 MB/s"   (comma decimals)
 *   "1073741824 Bytes (1,1 GB, 1,0 GiB) kopiert, 0,8 s, 1,3 GB/s"  (localized wording)
 * The line is read from its ends: the leading integer is the byte count; the last two
 * ", "-separated fields are the time ("T s") and the rate ("R UNIT/s": B, kB, MB, GB, TB,
 * KiB, MiB, GiB, TiB). mbps = bytes / seconds / 10^6 when seconds > 0, else the printed
 * rate converted. Returns 0, or -1 when no line reads (out zeroed). */
struct prov_dd_summary {
    double bytes;
    double seconds;
    double printed_mbps; /* the rate dd printed, in MB/s (its rounding) */
    double mbps;         /* bytes / seconds / 1e6 (or printed_mbps when seconds read 0) */
    int lines;           /* "copied" lines seen */
};
int prov_parse_dd(const char *text, size_t len, struct prov_dd_summary *out);

/* fio --output-format=json: the first JSON object in the text (lines before it, such as
 * fio's notes on stderr, are skipped), its jobs[] summed for one direction ("read" or
 * "write"): bytes (io_bytes; fio 2.x wrote KiB there, told apart by the absence of
 * io_kbytes), the rate (bw_bytes when present, else bw in KiB/s), the longest runtime
 * (ms). Jobs with no I/O in that direction are left out; a job with a non-zero error
 * fails the parse. Returns 0, or -1 with why[] (out zeroed). */
struct prov_fio_summary {
    double bytes;
    double mbps;
    double runtime_ms;
    int jobs; /* jobs that moved data in that direction */
    char version[32];
};
int prov_parse_fio(const char *text, size_t len, const char *dir, struct prov_fio_summary *out,
                   char *why, size_t whylen);

#endif

/* Parsers for the health monitor's samples (issue 13): kernel log lines with
 * Xid / SXid / fallen-off-the-bus events, one --query-gpu sample, and the
 * Fabric section of nvidia-smi -q.
 *
 * Same contract as provisioner/parse/parse.h: pure C, no I/O, no global state;
 * `text, len` need not be NUL-terminated; 0 or -1 with *err filled; results
 * zeroed on error; prov_*_free() is safe on a zeroed struct; every value a
 * tool did not report carries a non-OK prov_vstate_t and is never 0.
 *
 * PCI addresses.  Every PCI address these parsers return is in ONE canonical
 * form, the one nvidia-smi prints for pci.bus_id (and -q's "GPU ..." header,
 * and the default table's Bus-Id), which is how the rest of gpufleet stores
 * GPU bus ids:  DDDDDDDD:BB:DD.F  -- an 8-hex-digit domain, uppercase hex,
 * e.g. "00000000:3B:00.0".  The kernel prints "0000:3b:00" (Xid lines, no
 * function) or "0000:3b:00.0"; both become "00000000:3B:00.0", so an Xid
 * joins a sample's GPU with a plain strcmp.  When the function is missing
 * (the NVRM Xid prefix prints domain:bus:device only) it is 0 -- the GPU is
 * function 0 of its PCI device; the event says so (pci_function_implied).
 */
#ifndef GPUFLEET_PROV_PARSE_MONITOR_H
#define GPUFLEET_PROV_PARSE_MONITOR_H

#include <stdint.h>

#include "provisioner/parse/parse.h"

#define PROV_PCI_MAX 17 /* "00000000:3B:00.0" + NUL */

/* Canonical form of a PCI address ("0000:3b:00", "0000:3B:00.0",
 * "00000000:3b:00.0", domain 1-8 hex digits, bus 2, device 2 (<= 1f),
 * function 1 (<= 7) or absent), surrounding whitespace ignored.  Writes
 * out[PROV_PCI_MAX] and *function_implied (may be NULL); false (out = "")
 * for anything else -- nothing is guessed: "3b:00.0" without a domain is
 * refused. */
bool prov_pci_canon(const char *s, size_t n, char *out, bool *function_implied);

/* --------------------------------------------------- kernel log (kmsg) */

/* Accepted line shapes (any mix in one text):
 *   dmesg                        "[12345.678901] NVRM: Xid ..."
 *   dmesg -r                     "<4>[12345.678901] ..."
 *   dmesg -T / --ctime           "[Sun Feb 23 16:24:18 2025] ..."
 *   dmesg --time-format iso      "2024-11-15T05:39:15,491363+00:00 ..."
 *   dmesg --decode               "kern  :warn  : " before any of these
 *   syslog / journalctl (short)  "Jan  3 07:39:45 host kernel: [17257.355375] ..."
 *   journalctl -o short-iso[-precise]  "2025-01-21T02:21:33+0000 host kernel: ..."
 *   journalctl -o short-monotonic      "[ 4254.197816] host kernel: ..."
 *   a bare "kernel: ..." or "NVRM: ..." line, and continuation lines
 *   (leading blanks, no timestamp) of multi-line kernel messages
 *   journalctl --show-cursor's last line "-- cursor: s=...;i=...;..." and
 *   its "-- No entries --" / "-- Boot ... --" / "-- Logs begin ..." lines. */

typedef enum prov_kev_kind {
    PROV_KEV_XID = 1,        /* "NVRM: Xid (PCI:...): <code>, ..." */
    PROV_KEV_SXID,           /* "nvidia-nvswitchN: SXid (PCI:...): <code>, ..." */
    PROV_KEV_FALLEN_OFF_BUS, /* "fallen off the bus" without an Xid on that line */
} prov_kev_kind_t;

typedef enum prov_sxid_sev {
    PROV_SXID_SEV_UNSTATED = 0, /* continuation lines: "Severity 1 Engine ...", "Data {...}" */
    PROV_SXID_SEV_FATAL,        /* ", Fatal, ..." */
    PROV_SXID_SEV_NONFATAL      /* ", Non-fatal, ..." */
} prov_sxid_sev_t;

typedef enum prov_wall_kind {
    PROV_WALL_NONE = 0,
    PROV_WALL_ISO,    /* date, time and zone: epoch_us is set */
    PROV_WALL_CTIME,  /* date with year, local zone not stated */
    PROV_WALL_SYSLOG, /* "Mon dd hh:mm:ss": no year, no zone */
} prov_wall_kind_t;

typedef struct prov_ktime {
    bool has_mono;
    uint64_t mono_us; /* "[sec.frac]": microseconds since boot */
    prov_wall_kind_t wall;
    int year; /* 0 when the line does not say (PROV_WALL_SYSLOG) */
    int month, day, hour, min, sec;
    long usec;
    bool has_tz;
    int tz_min;       /* offset east of UTC, in minutes */
    int64_t epoch_us; /* meaningful only for PROV_WALL_ISO */
} prov_ktime_t;

#define PROV_KMSG_RAW_MAX     512  /* cleaned raw line(s) kept per event, bytes */
#define PROV_KMSG_LINE_MAX    8192 /* longer lines are skipped and counted */
#define PROV_KMSG_CURSOR_MAX  256
#define PROV_KMSG_EVENTS_DEF  1024 /* max_events == 0 */
#define PROV_KMSG_EVENTS_HARD 4096 /* max_events is capped here */

typedef struct prov_kevent {
    prov_kev_kind_t kind;
    unsigned line;          /* 1-based input line (the first line of a multi-line message) */
    int code;               /* Xid/SXid 1..65535; 0 for PROV_KEV_FALLEN_OFF_BUS */
    char pci[PROV_PCI_MAX]; /* canonical (see top); "" when the line had none or a bad one */
    bool pci_function_implied;
    bool pci_invalid;           /* the line had an address we refused */
    char device[24];            /* SXid: "nvidia-nvswitch0"; else "" */
    char uuid[PROV_ID_MAX];     /* from an earlier "NVRM: GPU at PCI:...: GPU-..." line, or "" */
    prov_num_t pid;             /* Xid "pid=N"; NA for pid='<unknown>' */
    char process[64];           /* Xid "name=..."; "" when absent or <unknown> */
    prov_sxid_sev_t severity;   /* SXid only */
    int caused_by;              /* Xid 45 "... caused by previous Xid N": N, else 0 */
    bool with_xid;              /* fallen-off-bus line after an Xid 79 for the same PCI */
    char message[PROV_MSG_MAX]; /* text after code/pid/name, valid UTF-8 */
    prov_ktime_t time;
    char raw[PROV_KMSG_RAW_MAX]; /* the line(s), valid UTF-8, cut at a character */
    bool raw_truncated;
    bool raw_cleaned; /* invalid UTF-8 or control bytes were replaced */
} prov_kevent_t;

typedef struct prov_kmsg {
    size_t nevents;
    prov_kevent_t *events;
    bool truncated; /* more events than max_events: `dropped` were not kept */
    size_t dropped;
    /* journalctl --show-cursor: the last valid cursor (for --after-cursor),
     * checked against [a-z]=[0-9a-f]+(;[a-z]=[0-9a-f]+)*; "" when none. */
    char cursor[PROV_KMSG_CURSOR_MAX];
    unsigned cursor_line;
    size_t bad_cursors; /* "-- cursor:" lines refused */
    bool no_entries;    /* "-- No entries --" */
    /* The largest "[sec.frac]" on any line: the mark for the next dmesg read
     * when journald is absent (events may have been dropped: see truncated). */
    bool has_mono;
    uint64_t max_mono_us;
    size_t nlines;
    size_t oversize_lines; /* > PROV_KMSG_LINE_MAX, skipped */
    size_t nul_lines;      /* contained a NUL byte, skipped */
    size_t malformed;      /* Xid/SXid-shaped lines refused (bad code, cut short) */
    unsigned first_malformed_line;
    size_t bad_times;  /* a timestamp-shaped prefix that failed validation */
    size_t incomplete; /* a multi-line fallen-off-the-bus message that never finished */
} prov_kmsg_t;

/* max_events: 0 = PROV_KMSG_EVENTS_DEF; capped at PROV_KMSG_EVENTS_HARD.
 * Fails only when out of memory. */
int prov_kmsg_parse(const char *text, size_t len, size_t max_events, prov_kmsg_t *out,
                    prov_err_t *err);
void prov_kmsg_free(prov_kmsg_t *k);
json_t *prov_kmsg_to_json(const prov_kmsg_t *k);
const char *prov_kev_kind_name(prov_kev_kind_t k);
const char *prov_sxid_sev_name(prov_sxid_sev_t s);

/* ------------------------------------------- one --query-gpu monitor sample */

/* Clock event (throttle) reasons: NVML's nvmlClocksEventReason* bits. */
#define PROV_CLK_GPU_IDLE            0x1ULL
#define PROV_CLK_APPLICATIONS_CLOCKS 0x2ULL
#define PROV_CLK_SW_POWER_CAP        0x4ULL
#define PROV_CLK_HW_SLOWDOWN         0x8ULL
#define PROV_CLK_SYNC_BOOST          0x10ULL
#define PROV_CLK_SW_THERMAL          0x20ULL
#define PROV_CLK_HW_THERMAL          0x40ULL
#define PROV_CLK_HW_POWER_BRAKE      0x80ULL
#define PROV_CLK_DISPLAY_CLOCKS      0x100ULL
#define PROV_CLK_KNOWN               0x1FFULL
/* The hardware-forced slowdowns (HW slowdown, HW thermal, HW power brake). */
#define PROV_CLK_HW_MASK (PROV_CLK_HW_SLOWDOWN | PROV_CLK_HW_THERMAL | PROV_CLK_HW_POWER_BRAKE)

/* The field list the monitor queries (clocks_event_reasons.active: drivers
 * >= 535; older ones only know clocks_throttle_reasons.active -- pass your
 * own list then; either name fills clk_reasons). */
extern const char *const prov_sample_fields[];
extern const size_t prov_sample_nfields;

typedef struct prov_sample_gpu {
    prov_vstate_t uuid_st, pci_st;
    char uuid[PROV_ID_MAX];
    char pci[PROV_PCI_MAX];                /* canonical */
    prov_num_t util_gpu_pct, util_mem_pct; /* 0..100 */
    prov_num_t mem_used_mib, mem_total_mib;
    prov_num_t temperature_c, power_draw_w;
    prov_num_t ecc_uncorr_volatile; /* a non-negative integer */
    prov_flag_t retired_pending, remapped_pending, remapped_failure;
    prov_vstate_t clk_st;
    uint64_t clk_reasons;     /* meaningful only when clk_st == PROV_V_OK */
    prov_vstate_t name_st;    /* INVALID: not UTF-8, a control character, too long */
    char name[PROV_NAME_MAX]; /* the product name, "" unless name_st == PROV_V_OK */
    unsigned invalid_cells;   /* cells present but not a valid value of their field */
} prov_sample_gpu_t;

typedef struct prov_sample {
    size_t ngpus;
    prov_sample_gpu_t *gpus;
    bool had_header;
} prov_sample_t;

/* fields/nfields as for prov_qgpu_parse (NULL: the text starts with a CSV
 * header); unknown fields are ignored, missing ones are PROV_V_ABSENT.
 * A value with the wrong unit ("12 W" for a percentage), out of range
 * (utilization 140 %, negative memory) or with trailing garbage is
 * PROV_V_INVALID.  A row without a valid UUID is kept (uuid_st says why). */
int prov_sample_parse(const char *text, size_t len, const char *const *fields, size_t nfields,
                      prov_sample_t *out, prov_err_t *err);
void prov_sample_free(prov_sample_t *s);
json_t *prov_sample_to_json(const prov_sample_t *s);

/* "0x0000000000000008" -> 0x8 (1-16 hex digits after 0x/0X); false for
 * anything else. */
bool prov_clk_reasons_parse(const char *s, size_t n, uint64_t *mask);
/* Snake-case name ("hw_slowdown") and label ("HW Slowdown") of one bit;
 * NULL for an unknown bit. */
const char *prov_clk_reason_name(uint64_t bit);
const char *prov_clk_reason_label(uint64_t bit);
/* A JSON array of the names of mask's bits (unknown bits as "0x..."). */
json_t *prov_clk_reasons_json(uint64_t mask);

/* ------------------------------------------------ nvidia-smi -q: Fabric */

typedef enum prov_fabric_verdict {
    PROV_FABRIC_UNREAD = 0, /* N/A, Not Supported, absent, an error marker or garbage */
    PROV_FABRIC_OK,         /* State Completed, Status Success */
    PROV_FABRIC_NOT_OK      /* Not Started / In Progress, or Completed with an error status */
} prov_fabric_verdict_t;

typedef struct prov_fabric_gpu {
    char pci[PROV_PCI_MAX]; /* from the "GPU 00000000:3B:00.0" header, canonical */
    bool has_section;       /* a "Fabric" section was present */
    prov_vstate_t state_st, status_st;
    char state[48];  /* "Completed", "In Progress", "Not Started", "Not Supported" */
    char status[96]; /* "Success" or NVML's error string */
    char clique_id[24];
    char cluster_uuid[PROV_ID_MAX];
    char health_bandwidth[24]; /* Health/Bandwidth ("Full", ...), "" if absent */
    prov_fabric_verdict_t verdict;
} prov_fabric_gpu_t;

typedef struct prov_fabric {
    size_t ngpus;
    prov_fabric_gpu_t *gpus;
    size_t n_ok, n_not_ok, n_unread;
    /* NOT_OK if any GPU is; else UNREAD if any GPU is or there are none; else OK. */
    prov_fabric_verdict_t verdict;
} prov_fabric_t;

/* nvidia-smi -q (or -q -i N, or -q -d ...) text.  Fails only when out of
 * memory or with more than PROV_MAX_ITEMS GPUs; a text without GPU blocks
 * parses to ngpus 0 (verdict UNREAD). */
int prov_fabric_parse(const char *text, size_t len, prov_fabric_t *out, prov_err_t *err);
void prov_fabric_free(prov_fabric_t *f);
json_t *prov_fabric_to_json(const prov_fabric_t *f);
const char *prov_fabric_verdict_name(prov_fabric_verdict_t v);

#endif

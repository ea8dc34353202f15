/* monitor_sample.h — one health sample of a host: the remote command the monitor runs on
 * its persistent SSH connection, and what its output says (provisioner/monitor/monitor.c drives
 * it). The command prints sections, each after a line "@@name", bounded so that the whole
 * fits the SSH engine's 8 KiB output tail:
 *   @@gpu       nvidia-smi --query-gpu=… (under `timeout`), then "@@gpu_rc N"
 *   @@kmsg      new kernel log lines that matter (filtered on the host: NVRM, Xid, SXid,
 *               NVSwitch, fallen off the bus, NVLink, ECC, remap; kmsg_filter below), read
 *               forward from the stored journalctl cursor (at most kmsg_page entries: its
 *               last line is the next cursor), or from dmesg after the stored monotonic mark
 *   @@kstat     "read shown stopped full": entries read, lines shown; stopped: the output
 *               budget ended the read after `read` entries (the rest is read next time);
 *               full: the page was read whole (more may follow)
 *   @@kmark     the monotonic time of the last entry read (the next dmesg mark)
 *   @@kcursor   stopped (journald): the cursor of the last entry read, a second pass
 *   @@ktail     full (journald): the cursor of the newest entry, to measure the backlog
 *   @@fabric    the GPU headers and Fabric sections of nvidia-smi -q (NVSwitch models)
 *   @@docker_rc whether `docker info` answers
 * Interpreting it turns readings and kernel events into the sample document that
 * monitor_store() stores, and decides whether the host must be isolated (the policy:
 * planner/xid_policy.h for Xids, the rules in monitor_sample.c for the rest). */
#ifndef GPUFLEET_MONITOR_SAMPLE_H
#define GPUFLEET_MONITOR_SAMPLE_H

#include <jansson.h>
#include <stddef.h>

#include "planner/xid_policy.h"

#define MON_CURSOR_MAX    256
#define MON_MAX_OVERRIDES 64

/* What a host's monitor remembers between samples. */
struct mon_memory {
    char cursor[MON_CURSOR_MAX]; /* journalctl cursor ("" before the first read) */
    double mono;                 /* dmesg mark, seconds since boot (-1: none) */
    struct mon_ecc {
        char uuid[96];
        double count;
    } * ecc;     /* last uncorrectable ECC count per GPU (malloc'd) */
    size_t necc; /* entries in ecc */
};

#define MON_KMSG_PAGE_DEF    100000  /* entries a sample reads at most */
#define MON_KMSG_BACKLOG_DEF 1000000 /* entries behind that are read later, not skipped */

struct mon_policy {
    int nvswitch;       /* read the fabric state */
    int gpu_count;      /* GPUs the pool expects */
    long kmsg_page;     /* kernel log entries a sample reads at most (0: MON_KMSG_PAGE_DEF) */
    long kmsg_backlog;  /* entries left behind after a sample that are read later; more are
                         * skipped to the newest, with a kernel_log_gap event (never silently);
                         * 0: MON_KMSG_BACKLOG_DEF */
    int kmsg_timeout_s; /* journalctl's and dmesg's `timeout` (0: 20) */
    plan_xid_override_t ov[MON_MAX_OVERRIDES];
    size_t nov;
};

/* The pool's monitor.xid_policy object ({"79": "record", "13": "isolate"}) into p->ov.
 * NULL or "" is no override. Returns 0, or -1 when it is not such an object. */
int mon_policy_overrides(struct mon_policy *p, const char *xid_policy_json);

/* The command for the next sample (caller frees); NULL when out of memory. */
char *mon_sample_command(const struct mon_memory *mem, const struct mon_policy *p);

struct mon_outcome {
    json_t *doc;       /* the sample document for monitor_store (owned) */
    int gpu_read;      /* nvidia-smi answered with at least one GPU */
    char isolate[512]; /* why the host must be isolated, or "" */
    char summary[256]; /* a short line for the log */
};

/* Reads a sample's output (out: the engine's tail, total: bytes the command printed).
 * Updates mem (cursor, mark, ECC counts). Returns 0, or -1 when out of memory. */
int mon_sample_read(struct mon_memory *mem, const struct mon_policy *p, const char *out,
                    size_t total, struct mon_outcome *o);
void mon_outcome_clear(struct mon_outcome *o);
/* Seeds mem's ECC counts from the last stored readings ({"GPU-…": n}, monitor_lease's
 * ecc_baseline; NULL or "" seeds nothing), so that a host taken over compares its next
 * count with the stored one: growth across a takeover isolates, a takeover alone never
 * does. Entries that are not a GPU UUID with a non-negative integer count are skipped.
 * Returns 0, or -1 when json is not such an object (mem unchanged) or out of memory. */
int mon_memory_seed_ecc(struct mon_memory *mem, const char *json);
void mon_memory_clear(struct mon_memory *mem);

#endif

/* gate_eval.h — the bottom of the gate: its types (what is checked, which checks, what a
 * judged check holds) and the helpers every judge uses (gate_eval.c). It includes no
 * other gate header; the others build on it, one way:
 *
 *   gate_checks.c  (gate_checks.h: the API)  ──>  gate_judges.h  (gate_inventory.c,
 *        │                                              │         gate_judges.c)
 *        └──────────────────────>  gate_eval.h  <───────┘         (gate_eval.c)
 *
 * Every message a judge sets is valid UTF-8 (gate_set cleans it) and claims only what
 * was read. */
#ifndef GPUFLEET_GATE_EVAL_H
#define GPUFLEET_GATE_EVAL_H

#include <jansson.h>

#include "planner/gate.h"
#include "provisioner/jobs/steps.h" /* struct prov_cmd_result */

#define GATE_MAX_CMDS     4
#define GATE_EVIDENCE_MAX 8192

/* The storage reference (gate.storage, provisioner/jobs/gate_storage.c). */
struct prov_storage_ref {
    int enabled;                          /* gate.storage set, the check named, or a test */
    long read_size_mib, write_size_mib;   /* bounded by the pool's spec */
    const char *artifact;                 /* relative to durable_path, or NULL: the probe */
    const char *tool;                     /* "auto", "dd" or "fio" */
    double min_read_mbps, min_write_mbps; /* 0: not judged */
    int require;                          /* unmeasurable here (fio or artifact absent): fail */
    int timeout_s;                        /* 0: by the sizes */
};

/* What the gate checks against: the pool's expectations and gate definition, the
 * catalog entry of the pool's GPU model, and the host's current stack. */
struct prov_gate {
    const char *image_ref;      /* repository@sha256:… of the current stack */
    const char *driver_version; /* the stack's pin */
    int expected_gpus;
    const char *expected_gpu_name; /* catalog nvidia_smi_name (may be NULL: not checked) */
    long expected_memory_mib;      /* catalog nvidia_smi_memory_total_mib (0: not checked) */
    const char *link_class;        /* every GPU pair must match ("any", "NV*", "PIX,PXB" …) */
    double storage_min_mbps;
    const char *durable_path, *scratch_path;
    const json_t *workload_command; /* array of strings, or NULL: the check is skipped */
    const char *workload_metric;
    double workload_min;
    int workload_timeout_s;
    const char *observability_url; /* or NULL: skipped */
    unsigned checks;               /* bit per enum prov_check; 0 = all */
    int diag_level;                /* diagnostics jobs: 1..3 */
    /* Query fields this GPU model legitimately reports as [N/A] or [Not Supported]
     * (catalog; comma-separated, e.g. "retired_pages.pending" on H100/A100): those pass and
     * are listed in values.not_applicable. NULL: every field the gate needs must read. */
    const char *na_fields;
    /* The bandwidth reference (pool gate.bandwidth; gate_bandwidth.c, issue 26). */
    struct prov_bw_cfg {
        int tool;              /* PROV_BW_NCCL | PROV_BW_NVBW bits */
        const char *path;      /* directory of the tools on the host; NULL: the stack's image */
        int require;           /* a missing tool fails the check (investigate) instead of a skip */
        int host_to_device;    /* nvbandwidth host_to_device_memcpy_ce too (any GPU count) */
        double min_allreduce;  /* GB/s; 0: the catalog's, else none */
        double min_d2d;        /* GB/s; 0: the catalog's, else none */
        int min_mib, max_mib;  /* all_reduce_perf -b/-e sizes */
        int iters;             /* all_reduce_perf -n, nvbandwidth -i */
        int timeout_s;         /* each tool command */
        int expect_numa_nodes; /* 0: not checked */
        const char *gpu_model, *interconnect; /* the catalog's key */
    } bw;
    struct prov_storage_ref storage;
    /* A restore drill (job_drill.c): the restored copy on scratch, mounted read-only at
     * /gpufleet/restored (GPUFLEET_RESTORED_DIR) in the containers of container_gpu and
     * workload; NULL for a gate. */
    const char *restore_dir;
};
enum { PROV_BW_NCCL = 1, PROV_BW_NVBW = 2 };

enum prov_check {
    PROV_CHECK_GPU_INVENTORY,
    PROV_CHECK_CONTAINER_GPU,
    PROV_CHECK_WORKLOAD,
    PROV_CHECK_TOPOLOGY,
    PROV_CHECK_STORAGE,
    PROV_CHECK_OBSERVABILITY,
    PROV_CHECK_BANDWIDTH,          /* all_reduce_perf / nvbandwidth (gate_bandwidth.c) */
    PROV_CHECK_DIAGNOSTICS,        /* dcgmi diag (diagnostics jobs only) */
    PROV_CHECK_STORAGE_THROUGHPUT, /* the data path's rates (gate.storage) */
    PROV_CHECK__COUNT,
};
extern const char *const prov_check_names[]; /* gpu_inventory, container_gpu, … */
/* The fields gpu_inventory queries (nvidia-smi --query-gpu=…), in order. */
#define PROV_INV_NFIELDS 9
extern const char *const prov_inv_fields[PROV_INV_NFIELDS];

/* A judged check. message is always valid UTF-8 (host output in it is cleaned and cut
 * at a character boundary), and so is every string in values. A value a rule needs that
 * could not be read fails the check (investigate) and the message names it. */
struct prov_check_out {
    enum plan_check_status status;
    int hardware_evidence;
    char message[512];
    json_t *values; /* parsed values (owned; may be NULL) */
};

/* ---- the helpers every judge uses (gate_eval.c) */

/* Indexes into prov_inv_fields. */
enum { F_INDEX, F_NAME, F_UUID, F_MEMORY, F_DRIVER, F_BUS, F_ECC, F_RETIRED, F_REMAPPED };

/* What a command said: stderr when it has any, else stdout (never NULL). */
const char *gate_text_of(const struct prov_cmd_result *r);
/* stdout, never NULL. */
const char *gate_out_of(const struct prov_cmd_result *r);
/* Sets status, hardware evidence and the message (formatted, then cleaned). */
void gate_set(struct prov_check_out *o, enum plan_check_status st, int hw, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Appends one part to a "; "-separated text in buf[cap] (a part that does not fit is left
 * out, marked once by "…"). */
void gate_addf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Host text as a JSON string (cleaned), or null for NULL. */
json_t *gate_jtext(const char *s);
/* Host text bounded to a short cleaned quote; "nothing" when empty. */
const char *gate_quote(const char *s, char *buf, size_t n);

#endif

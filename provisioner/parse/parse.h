/* Parsers for NVIDIA / DCGM / container tool output.
 *
 * Pure C, no I/O, no global state.  Every parser takes `text, len` (the
 * bytes need not be NUL-terminated; nothing past `len` is read), fills a
 * caller-provided result struct and returns 0, or returns -1 and fills
 * `*err` (which may be NULL) with a message naming the line/column or what
 * was expected.  On error the result struct is left zeroed: nothing to free.
 * On success the caller owns the result and releases it with the matching
 * prov_*_free() (safe on a zeroed struct, and idempotent).
 *
 * Every result can be rendered as JSON (jansson) for evidence storage:
 * prov_*_to_json() returns a new reference (caller owns, json_decref), or
 * NULL on allocation failure.
 *
 * Values that the tool did not report ("[N/A]", "N/A", "[Not Supported]",
 * "ERR!", deprecated markers, a field that was not queried, ...) are never
 * turned into 0: numbers and flags carry a prov_vstate_t and only
 * PROV_V_OK means the value is meaningful.
 *
 * Strings in results are fixed-size, NUL-terminated and silently truncated
 * to their buffer (tool output is untrusted; sizes are generous for real
 * values).
 */
#ifndef GPUFLEET_PROV_PARSE_H
#define GPUFLEET_PROV_PARSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* ---------------------------------------------------------------- common */

typedef struct prov_err {
    unsigned line; /* 1-based; 0 when not tied to a line */
    unsigned col;  /* 1-based; 0 when not tied to a column */
    char msg[256];
} prov_err_t;

/* State of a scalar reported by a tool. */
typedef enum prov_vstate {
    PROV_V_ABSENT = 0,    /* not present in the output (not queried / no such column) */
    PROV_V_OK,            /* value parsed */
    PROV_V_NA,            /* "[N/A]" or "N/A" */
    PROV_V_NOT_SUPPORTED, /* "[Not Supported]" */
    PROV_V_DEPRECATED,    /* "[Requested functionality has been deprecated]" */
    PROV_V_UNKNOWN_ERROR, /* "[Unknown Error]" */
    PROV_V_ERR,           /* "ERR!" in the default table, "[GPU requires reset]", ... */
    PROV_V_INVALID        /* present but not parseable as the expected type */
} prov_vstate_t;

typedef struct prov_num {
    prov_vstate_t st;
    double v; /* meaningful only when st == PROV_V_OK */
} prov_num_t;

typedef struct prov_flag {
    prov_vstate_t st;
    bool v; /* meaningful only when st == PROV_V_OK */
} prov_flag_t;

#define PROV_NAME_MAX 96
#define PROV_ID_MAX   80
#define PROV_VER_MAX  40
#define PROV_MSG_MAX  512

const char *prov_vstate_name(prov_vstate_t st);
/* Classify one raw cell ("[N/A]", "ERR!", ...); PROV_V_OK for anything else
 * that is non-empty, PROV_V_ABSENT for empty. */
prov_vstate_t prov_value_state(const char *s, size_t n);

/* ------------------------------------ 1. nvidia-smi --query-gpu=... --format=csv */

typedef struct prov_qgpu_row {
    prov_num_t index;
    prov_vstate_t name_st, uuid_st, bus_id_st, driver_st;
    char name[PROV_NAME_MAX];
    char uuid[PROV_ID_MAX];
    char bus_id[PROV_ID_MAX]; /* pci.bus_id (or pci.bus when only that was queried) */
    char driver_version[PROV_VER_MAX];
    prov_num_t mem_total_mib, mem_used_mib, mem_free_mib;
    prov_num_t temperature_c, util_gpu_pct, power_draw_w;
    prov_num_t ecc_uncorr_volatile, ecc_uncorr_aggregate;
    prov_flag_t retired_pending, remapped_pending, mig_enabled;
} prov_qgpu_row_t;

typedef struct prov_qgpu {
    size_t nfields;
    const char **fields; /* field names, units stripped (point into buf) */
    const char **units;  /* "MiB", "%", ... or "" (point into buf) */
    bool had_header;
    size_t nrows;
    const char **cells; /* nrows * nfields raw trimmed cells (point into buf) */
    prov_qgpu_row_t *rows;
    size_t n_deprecated; /* cells carrying the deprecated marker */
    char *buf;           /* owned storage */
} prov_qgpu_t;

/* fields/nfields: the names passed to --query-gpu (or --query-compute-apps)
 * in order; needed for noheader output.  With fields == NULL the first line
 * must be the header.  With fields given, a header line is recognised and
 * checked against them.  Works for any nvidia-smi --query-* CSV; the typed
 * `rows` are filled from whichever known GPU fields are present. */
int prov_qgpu_parse(const char *text, size_t len, const char *const *fields, size_t nfields,
                    prov_qgpu_t *out, prov_err_t *err);
/* Raw trimmed cell of `field` (units ignored, aliases like gpu_uuid/uuid
 * accepted) in `row`, or NULL. Borrowed from q. */
const char *prov_qgpu_cell(const prov_qgpu_t *q, size_t row, const char *field);
/* Column index of `field` (same matching as prov_qgpu_cell), or -1: look a
 * column up once, then read q->cells[row * q->nfields + col]. */
int prov_qgpu_field(const prov_qgpu_t *q, const char *field);
void prov_qgpu_free(prov_qgpu_t *q);
json_t *prov_qgpu_to_json(const prov_qgpu_t *q);

/* ------------------------------------------- 2. nvidia-smi (default table) */

typedef struct prov_smi_gpu {
    int index;
    char name[PROV_NAME_MAX];
    bool name_truncated; /* name ended with "..." */
    char bus_id[PROV_ID_MAX];
    char mode[16]; /* Persistence-M (On/Off) or Driver-Model (WDDM/TCC) */
    prov_num_t mem_used_mib, mem_total_mib;
    prov_num_t temperature_c, util_gpu_pct, power_w, power_cap_w, fan_pct, ecc_uncorr;
    char perf[8];
    prov_flag_t mig_enabled;
    bool err;            /* any field shows ERR! */
    unsigned err_fields; /* how many fields show ERR! */
} prov_smi_gpu_t;

typedef struct prov_smi_mig {
    int gpu, gi, ci, mig_dev;
    prov_num_t mem_used_mib, mem_total_mib, sm;
} prov_smi_mig_t;

typedef struct prov_smi_proc {
    int gpu;
    prov_num_t gi, ci, pid;
    char type[8];
    char name[PROV_NAME_MAX];
    prov_num_t mem_mib;
} prov_smi_proc_t;

typedef struct prov_smi {
    char smi_version[PROV_VER_MAX];
    char driver_version[PROV_VER_MAX];
    char cuda_version[PROV_VER_MAX]; /* "" when absent or N/A */
    size_t ngpus;
    prov_smi_gpu_t *gpus;
    size_t nmig;
    prov_smi_mig_t *mig;
    size_t nprocs;
    prov_smi_proc_t *procs;
    bool procs_section; /* a Processes: table was present */
    unsigned gpus_with_err;
} prov_smi_t;

int prov_smi_parse(const char *text, size_t len, prov_smi_t *out, prov_err_t *err);
void prov_smi_free(prov_smi_t *s);
json_t *prov_smi_to_json(const prov_smi_t *s);

/* ------------------------------------------------------- 3. nvidia-smi -L */

typedef struct prov_list_mig {
    int gpu;          /* parent GPU index */
    int device;       /* MIG device index */
    char profile[32]; /* e.g. "3g.40gb" */
    char uuid[PROV_ID_MAX];
} prov_list_mig_t;

typedef struct prov_list_gpu {
    int index;
    char name[PROV_NAME_MAX];
    char uuid[PROV_ID_MAX];
} prov_list_gpu_t;

typedef struct prov_list {
    size_t ngpus;
    prov_list_gpu_t *gpus;
    size_t nmig;
    prov_list_mig_t *mig;
} prov_list_t;

int prov_list_parse(const char *text, size_t len, prov_list_t *out, prov_err_t *err);
void prov_list_free(prov_list_t *l);
json_t *prov_list_to_json(const prov_list_t *l);

/* ------------------------------------------ 4. nvidia-smi topo -m / -p2p */

#define PROV_LINK_MAX 8 /* "NV18", "NODE", "X", "GNS", ... */

typedef struct prov_topo {
    size_t ngpus, nnics;
    /* (ngpus + nnics)^2 cells, row-major, device order GPU0..GPUn-1 then
     * NIC0..; "" where the output had no cell. */
    char (*cells)[PROV_LINK_MAX];
    char (*nic_names)[PROV_ID_MAX];     /* column label (NIC0, mlx5_0, ...) */
    char (*nic_devs)[PROV_ID_MAX];      /* from the NIC Legend ("mlx5_2"), or "" */
    char (*cpu_affinity)[PROV_ID_MAX];  /* per GPU; "" if absent */
    char (*numa_affinity)[PROV_ID_MAX]; /* per GPU; "" if absent */
    char (*gpu_numa_id)[PROV_ID_MAX];   /* per GPU; "" if absent */
    bool has_cpu_affinity, has_numa_affinity, has_gpu_numa_id;
    bool has_legend, has_nic_legend;
    bool p2p; /* an -p2p status matrix (OK/GNS/...) rather than link classes */
} prov_topo_t;

int prov_topo_parse(const char *text, size_t len, prov_topo_t *out, prov_err_t *err);
/* Link class between GPU a and GPU b ("" if out of range). Borrowed. */
const char *prov_topo_gpu_link(const prov_topo_t *t, size_t a, size_t b);
/* Link class between GPU g and NIC n ("" if out of range). Borrowed. */
const char *prov_topo_gpu_nic_link(const prov_topo_t *t, size_t g, size_t n);
/* Does `link` ("NV12", "PIX", ...) satisfy `expected`: "any", "NV*",
 * "NV12", "PIX", or a comma list "NV*,PIX" (case-insensitive, spaces
 * ignored)?  NULL/empty expected means "any". */
bool prov_link_matches(const char *link, const char *expected);
/* Check every GPU pair (a < b) against `expected`.  Returns the number of
 * failing pairs; the first failing pair goes to *bad_a and *bad_b (either may be NULL). */
size_t prov_topo_check_pairs(const prov_topo_t *t, const char *expected, size_t *bad_a,
                             size_t *bad_b);
/* Smallest NVLink bond count over all GPU pairs: 0 if some pair is not
 * NV#, -1 with fewer than two GPUs. */
int prov_topo_min_nvlinks(const prov_topo_t *t);
void prov_topo_free(prov_topo_t *t);
json_t *prov_topo_to_json(const prov_topo_t *t);

/* ------------------------------------------------- 5. nvidia-smi nvlink -s */

typedef enum prov_nvlink_status {
    PROV_NVLINK_LINKS = 0,    /* per-link lines follow */
    PROV_NVLINK_UNSUPPORTED,  /* "Device does not have or support Nvlink" */
    PROV_NVLINK_ALL_INACTIVE, /* "... all links are inActive" */
    PROV_NVLINK_ERROR         /* some other NVML error line */
} prov_nvlink_status_t;

typedef struct prov_nvlink_link {
    int id;
    bool active;
    double gbps; /* 0 when inactive */
} prov_nvlink_link_t;

typedef struct prov_nvlink_gpu {
    int index;
    char name[PROV_NAME_MAX];
    char uuid[PROV_ID_MAX];
    prov_nvlink_status_t status;
    char message[PROV_NAME_MAX * 2];
    size_t nlinks;
    prov_nvlink_link_t *links;
    size_t nactive;
} prov_nvlink_gpu_t;

typedef struct prov_nvlink {
    size_t ngpus;
    prov_nvlink_gpu_t *gpus;
} prov_nvlink_t;

int prov_nvlink_parse(const char *text, size_t len, prov_nvlink_t *out, prov_err_t *err);
void prov_nvlink_free(prov_nvlink_t *n);
json_t *prov_nvlink_to_json(const prov_nvlink_t *n);
const char *prov_nvlink_status_name(prov_nvlink_status_t s);

/* ------------------------------------------------------- 6. dcgmi diag -r N */

typedef enum prov_diag_result {
    PROV_DIAG_NONE = 0, /* no result given */
    PROV_DIAG_PASS,
    PROV_DIAG_FAIL,
    PROV_DIAG_SKIP,
    PROV_DIAG_WARN,
    PROV_DIAG_ERROR /* an "Error" row / DCGM 4 "Error:" line */
} prov_diag_result_t;

typedef struct prov_diag_gpu_result {
    int gpu; /* -1 = "All" */
    prov_diag_result_t result;
} prov_diag_gpu_result_t;

#define PROV_DIAG_MAX_GPU_RESULTS 16

typedef struct prov_diag_test {
    char category[32]; /* Metadata, Deployment, Integration, Hardware, Stress, ... */
    char name[64];
    prov_diag_result_t result; /* worst of the per-GPU results */
    char result_text[PROV_NAME_MAX];
    size_t ngpu_results;
    prov_diag_gpu_result_t gpu_results[PROV_DIAG_MAX_GPU_RESULTS];
    char message[PROV_MSG_MAX]; /* Info/Warning/Error rows, wrapped lines re-joined */
} prov_diag_test_t;

typedef struct prov_diag {
    bool ran_ok_banner;  /* "Successfully ran diagnostic for group." */
    bool table_complete; /* closing border seen */
    char dcgm_version[PROV_VER_MAX];
    char driver_version[PROV_VER_MAX];
    char gpu_device_ids[PROV_NAME_MAX];
    size_t ntests;
    prov_diag_test_t *tests;
    size_t nerrors; /* "Error:" lines (DCGM 4) */
    char (*errors)[PROV_MSG_MAX];
    prov_diag_result_t verdict; /* PASS, FAIL, WARN or ERROR */
} prov_diag_t;

int prov_diag_parse(const char *text, size_t len, prov_diag_t *out, prov_err_t *err);
void prov_diag_free(prov_diag_t *d);
json_t *prov_diag_to_json(const prov_diag_t *d);
const char *prov_diag_result_name(prov_diag_result_t r);
/* Find a test by name (case-insensitive); NULL if none. Borrowed. */
const prov_diag_test_t *prov_diag_find(const prov_diag_t *d, const char *name);

/* ------------------------------- 7. docker / nvidia-container-cli errors, info */

typedef enum prov_ctr_reason {
    PROV_CTR_OK = 0,
    PROV_CTR_NO_RUNTIME, /* could not select device driver ... [[gpu]] / unknown runtime */
    PROV_CTR_LIBNVIDIA_ML_MISSING, /* libnvidia-ml.so.1 cannot be loaded */
    PROV_CTR_NO_GPU_DRIVER,        /* driver not loaded / no NVIDIA driver */
    PROV_CTR_DRIVER_MISMATCH,      /* driver/library version mismatch */
    PROV_CTR_REQUIREMENT,          /* unsatisfied condition: cuda>=... */
    PROV_CTR_NO_DEVICE,            /* device error / no CUDA-capable device */
    PROV_CTR_DAEMON_DOWN,          /* Cannot connect to the Docker daemon */
    PROV_CTR_PERMISSION,           /* permission denied on the docker socket */
    PROV_CTR_IMAGE,                /* image pull / not found */
    PROV_CTR_NOT_INSTALLED,        /* docker: command not found */
    PROV_CTR_UNKNOWN               /* an error we do not recognise */
} prov_ctr_reason_t;

typedef struct prov_ctr_error {
    prov_ctr_reason_t reason;
    unsigned line;              /* 1-based line of the match, 0 if none */
    char matched[PROV_MSG_MAX]; /* the matched line, trimmed */
} prov_ctr_error_t;

/* Classifies docker / docker compose / nvidia-container-cli output.
 * exit_status: the command's exit status (0 and no error line => OK; pass
 * -1 when unknown).  Never fails. */
void prov_ctr_classify(const char *text, size_t len, int exit_status, prov_ctr_error_t *out);
const char *prov_ctr_reason_name(prov_ctr_reason_t r);
json_t *prov_ctr_error_to_json(const prov_ctr_error_t *e);

typedef struct prov_ctr_dev {
    prov_num_t index, minor;
    char model[PROV_NAME_MAX];
    char brand[32];
    char uuid[PROV_ID_MAX];
    char bus[PROV_ID_MAX];
    char arch[16];
} prov_ctr_dev_t;

typedef struct prov_ctr_info {
    char nvrm_version[PROV_VER_MAX]; /* "" when "(null)" */
    char cuda_version[PROV_VER_MAX];
    size_t ndevs;
    prov_ctr_dev_t *devs;
    size_t nlog_lines; /* glog-style debug lines skipped */
} prov_ctr_info_t;

/* nvidia-container-cli [-k -d ...] info.  "(null)" values become "". */
int prov_ctr_info_parse(const char *text, size_t len, prov_ctr_info_t *out, prov_err_t *err);
void prov_ctr_info_free(prov_ctr_info_t *i);
json_t *prov_ctr_info_to_json(const prov_ctr_info_t *i);

/* ------------------------------------- 8/9. nvcc, /proc version, smi --version */

typedef struct prov_nvcc {
    char release[PROV_VER_MAX]; /* "12.6" */
    char version[PROV_VER_MAX]; /* "12.6.77" (without the V) */
    char build[PROV_NAME_MAX];  /* "cuda_12.6.r12.6/compiler.34841621_0" or "" */
    int major, minor;
} prov_nvcc_t;

int prov_nvcc_parse(const char *text, size_t len, prov_nvcc_t *out, prov_err_t *err);
json_t *prov_nvcc_to_json(const prov_nvcc_t *n);

typedef struct prov_kmod {
    char version[PROV_VER_MAX]; /* "565.57.01" */
    char arch[16];              /* "x86_64", "aarch64" or "" */
    bool open;                  /* "Open Kernel Module" */
    char gcc[PROV_NAME_MAX];    /* "gcc version 13.3.0 (...)" or "" */
} prov_kmod_t;

int prov_kmod_parse(const char *text, size_t len, prov_kmod_t *out, prov_err_t *err);
json_t *prov_kmod_to_json(const prov_kmod_t *k);

typedef struct prov_smi_version {
    char smi[PROV_VER_MAX], nvml[PROV_VER_MAX], driver[PROV_VER_MAX], cuda[PROV_VER_MAX];
} prov_smi_version_t;

/* nvidia-smi --version */
int prov_smi_version_parse(const char *text, size_t len, prov_smi_version_t *out, prov_err_t *err);
json_t *prov_smi_version_to_json(const prov_smi_version_t *v);

/* ----------------------------------------- nvidia-smi failure classifier */

typedef enum prov_nvsmi_reason {
    PROV_NVSMI_OK = 0,
    PROV_NVSMI_NO_DRIVER,               /* couldn't communicate with the NVIDIA driver */
    PROV_NVSMI_NO_DEVICES,              /* No devices were found */
    PROV_NVSMI_DRIVER_LIBRARY_MISMATCH, /* Driver/library version mismatch */
    PROV_NVSMI_NVML_INIT,               /* Failed to initialize NVML: (other) */
    PROV_NVSMI_GPU_LOST,                /* GPU is lost / Unable to determine the device handle */
    PROV_NVSMI_PERMISSION,              /* Insufficient Permissions */
    PROV_NVSMI_NOT_INSTALLED,           /* nvidia-smi: command not found */
    PROV_NVSMI_USAGE,                   /* ERROR: Option ... (bad invocation) */
    PROV_NVSMI_UNKNOWN
} prov_nvsmi_reason_t;

typedef struct prov_nvsmi_error {
    prov_nvsmi_reason_t reason;
    unsigned line;
    char message[PROV_MSG_MAX];
    char nvml_library_version[PROV_VER_MAX]; /* "NVML library version: 550.144" */
} prov_nvsmi_error_t;

/* Classifies nvidia-smi stdout+stderr.  OK when nothing matches and
 * exit_status is 0 or -1 (unknown).  Never fails. */
void prov_nvsmi_error_classify(const char *text, size_t len, int exit_status,
                               prov_nvsmi_error_t *out);
const char *prov_nvsmi_reason_name(prov_nvsmi_reason_t r);
json_t *prov_nvsmi_error_to_json(const prov_nvsmi_error_t *e);

/* ------------------------------------------------ nvidia-smi -q -x (XML) */

typedef struct prov_xml_gpu {
    char bus_id[PROV_ID_MAX]; /* <gpu id="..."> */
    char product_name[PROV_NAME_MAX];
    char uuid[PROV_ID_MAX];
    prov_num_t fb_total_mib, fb_used_mib;
    prov_num_t ecc_dram_uncorr_volatile, ecc_dram_uncorr_aggregate;
    prov_flag_t retired_pending, remapped_pending, mig_enabled;
    size_t nmig_devices;
} prov_xml_gpu_t;

typedef struct prov_xml {
    char driver_version[PROV_VER_MAX];
    char cuda_version[PROV_VER_MAX];
    prov_num_t attached_gpus;
    size_t ngpus;
    prov_xml_gpu_t *gpus;
} prov_xml_t;

/* A tolerant tag scanner, not an XML parser: no entities, no DTD. */
int prov_xml_parse(const char *text, size_t len, prov_xml_t *out, prov_err_t *err);
void prov_xml_free(prov_xml_t *x);
json_t *prov_xml_to_json(const prov_xml_t *x);

#endif

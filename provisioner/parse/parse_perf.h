/* parse_perf.h — bandwidth references (issue 26): nccl-tests *_perf output, nvbandwidth
 * output, and the host's NUMA layout (numactl -H / lscpu). Fixtures and their quirks:
 * tests/fixtures/perf/SOURCES.md. The parsers read untrusted bytes: every count is
 * bounded, every copied string is cut and cleaned of control bytes, and a parse that
 * did not see the parts a verdict needs says so (the judge fails closed on it). */
#ifndef GPUFLEET_PROV_PARSE_PERF_H
#define GPUFLEET_PROV_PARSE_PERF_H

#include <stdbool.h>
#include <stddef.h>

/* ---- nccl-tests (all_reduce_perf, all_gather_perf, alltoall_perf, …) */

#define PROV_NCCL_ERR_MAX 200

typedef struct prov_nccl {
    int nranks;          /* "#  Rank  N …" device lines */
    int ngpus_header;    /* "nGpus N" of the header (per process), -1 if absent */
    int nrows;           /* result rows read */
    double max_size;     /* bytes of the largest row */
    double busbw_at_max; /* out-of-place busbw (GB/s) of the largest row */
    double peak_busbw;   /* largest out-of-place busbw over all rows */
    double avg_busbw;    /* "# Avg bus bandwidth : x"; valid when has_avg */
    bool has_avg;        /* the trailer was read (output not cut before it) */
    bool has_oob;        /* "# Out of bounds values : N OK|FAILED" read */
    long oob_values;     /* N of that line */
    bool oob_failed;     /* it said FAILED */
    long wrong;          /* sum of numeric #wrong cells (N/A cells count 0) */
    int wrong_na;        /* #wrong cells that read N/A (not validated) */
    int unsorted_rows;   /* rows whose size is not above the previous row's */
    int errors;          /* failure lines: Test CUDA/NCCL failure, Test failure, NCCL error */
    char first_error[PROV_NCCL_ERR_MAX]; /* the first of them, cleaned */
    bool started;                        /* "# Collective test starting" (nccl-tests >= 2.17) */
    bool concluded;                      /* "# Collective test concluded" */
} prov_nccl_t;

/* Always fills *out (zeroed first); returns 0 when a result table with at least one row
 * was read, -1 otherwise (out still says what was seen: errors, ranks). Launcher prefixes
 * (srun -l " 0: ", OpenMPI "[1,0]<stdout>:", "[0]") are removed; other programs' lines
 * (OpenMPI warnings, NCCL INFO) are skipped. */
int prov_nccl_parse(const char *text, size_t len, prov_nccl_t *out);

/* ---- nvbandwidth */

#define PROV_NVBW_TESTS    48
#define PROV_NVBW_NAME_MAX 64

typedef struct prov_nvbw_test {
    char name[PROV_NVBW_NAME_MAX]; /* device_to_device_memcpy_read_ce, … */
    bool running, waived, has_sum;
    double sum;              /* SUM line */
    int ncells;              /* measured cells (N/A not counted) */
    double min, median, max; /* over the measured cells */
} prov_nvbw_test_t;

typedef struct prov_nvbw {
    char version[32]; /* "v0.8", "" if absent */
    int ndevices;     /* "Device N: …" lines */
    int ntests;
    prov_nvbw_test_t tests[PROV_NVBW_TESTS];
    int failures; /* ASSERT, "Invalid value", Aborted, Segmentation fault, "error" lines */
    char first_failure[PROV_NCCL_ERR_MAX];
} prov_nvbw_t;

/* Always fills *out; returns 0 when at least one test was read (run, waived or summed). */
int prov_nvbw_parse(const char *text, size_t len, prov_nvbw_t *out);
/* The named test, or NULL. */
const prov_nvbw_test_t *prov_nvbw_find(const prov_nvbw_t *b, const char *name);

/* ---- NUMA layout: numactl -H (also --cpu-compress) or lscpu (flat or sectioned) */

#define PROV_NUMA_NODES   64
#define PROV_NUMA_CPU_MAX 96

typedef struct prov_numa {
    int nnodes;  /* declared ("available: N nodes", "NUMA node(s): N"), else counted */
    int nlisted; /* nodes with a cpu line */
    int nodes_with_cpus;
    char cpus[PROV_NUMA_NODES][PROV_NUMA_CPU_MAX]; /* per node id ("" when none/absent) */
    bool from_numactl, from_lscpu;
} prov_numa_t;

/* Returns 0 when a NUMA layout was read. */
int prov_numa_parse(const char *text, size_t len, prov_numa_t *out);

#endif

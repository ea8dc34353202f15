/* Tiny test harness for the parser tests: "ok - name" / "not ok - name"
 * lines, then "N passed, N failed". */
#ifndef GPUFLEET_TESTS_PARSERS_HARNESS_H
#define GPUFLEET_TESTS_PARSERS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "provisioner/parse/parse.h"

typedef struct th {
    unsigned passed, failed;
    /* current test */
    unsigned nfail;
    char first[512];
} th_t;

void th_begin(th_t *t);
void th_end(th_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void th_fail(th_t *t, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define EXPECT(t, c)                          \
    do {                                      \
        if (!(c))                             \
            th_fail((t), __LINE__, "%s", #c); \
    } while (0)
#define EXPECT_STR(t, a, b)                                                                  \
    do {                                                                                     \
        const char *a_ = (a), *b_ = (b);                                                     \
        if (!a_ || strcmp(a_, b_) != 0)                                                      \
            th_fail((t), __LINE__, "%s is '%s', expected '%s'", #a, a_ ? a_ : "(null)", b_); \
    } while (0)
#define EXPECT_NUM(t, n, val)                                              \
    do {                                                                   \
        prov_num_t n_ = (n);                                               \
        if (n_.st != PROV_V_OK || n_.v != (double)(val))                   \
            th_fail((t), __LINE__, "%s is %g (%s), expected %g", #n, n_.v, \
                    prov_vstate_name(n_.st), (double)(val));               \
    } while (0)
#define EXPECT_ST(t, n, state)                                                                  \
    do {                                                                                        \
        if ((n).st != (state))                                                                  \
            th_fail((t), __LINE__, "%s state is %s, expected %s", #n, prov_vstate_name((n).st), \
                    prov_vstate_name(state));                                                   \
    } while (0)
#define EXPECT_FLAG(t, f, val) EXPECT(t, (f).st == PROV_V_OK && (f).v == (val))
#define EXPECT_SZ(t, a, b)                                                 \
    do {                                                                   \
        size_t a_ = (size_t)(a), b_ = (size_t)(b);                         \
        if (a_ != b_)                                                      \
            th_fail((t), __LINE__, "%s is %zu, expected %zu", #a, a_, b_); \
    } while (0)

/* Parser families, one per fixture kind. */
typedef enum pkind {
    PK_QGPU,
    PK_SMI,
    PK_LIST,
    PK_TOPO,
    PK_NVLINK,
    PK_DIAG,
    PK_CTR,
    PK_CTR_INFO,
    PK_NVCC,
    PK_KMOD,
    PK_SMI_VERSION,
    PK_NVSMI_ERR,
    PK_XML,
    PK_KMSG,   /* kernel log (parse_kmsg.c) */
    PK_SAMPLE, /* monitor --query-gpu sample (parse_sample.c) */
    PK_FABRIC, /* nvidia-smi -q Fabric (parse_fabric.c) */
    PK_COUNT
} pkind_t;

const char *pk_name(pkind_t k);
/* Runs parser k on (text, len), renders JSON, frees everything.  Returns 0
 * parsed, 1 clean error (message set), -1 contract violation. */
int pk_run(pkind_t k, const char *text, size_t len, char *why, size_t why_cap);

/* In a fixture check (t in scope): declares prov_err_t err, runs the parse, and on failure
 * fails the test with err's message and returns. */
#define PARSE_OR_FAIL(call)                                \
    prov_err_t err;                                        \
    memset(&err, 0, sizeof err);                           \
    if ((call) != 0) {                                     \
        th_fail(t, __LINE__, "parse failed: %s", err.msg); \
        return;                                            \
    }

/* Per-fixture checks, one table per family of tools: nvidia-smi's query CSV and table
 * (test_fixtures_smi.c), -L / nvlink / topo (test_fixtures_links.c), the others
 * (test_fixtures.c). */
typedef void (*fixture_check_fn)(th_t *t, const char *text, size_t len);
typedef struct fixture_case {
    const char *file;
    pkind_t kind;
    fixture_check_fn check;
} fixture_case_t;

extern const fixture_case_t smi_fixture_cases[];
extern const size_t smi_fixture_cases_n;
extern const fixture_case_t link_fixture_cases[];
extern const size_t link_fixture_cases_n;
extern const fixture_case_t fixture_cases[];
extern const size_t fixture_cases_n;
/* The health monitor's parsers (test_monitor.c); a file may be in both tables. */
extern const fixture_case_t monitor_fixture_cases[];
extern const size_t monitor_fixture_cases_n;

void run_unit_tests(th_t *t);         /* test_helpers.c */
void run_monitor_unit_tests(th_t *t); /* test_monitor_unit.c */
/* pk_run for PK_KMSG, PK_SAMPLE, PK_FABRIC (test_monitor.c): rc and *j as pk_run's. */
int pk_run_monitor(pkind_t k, const char *text, size_t len, prov_err_t *err, json_t **j);

#endif

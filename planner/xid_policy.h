/* Xid catalog and the default isolate-or-record policy for GPU kernel events
 * (issue 13).  Pure: no I/O.
 *
 * The catalog is NVIDIA's (data/xid_catalog.csv, provenance in
 * data/SOURCES.md), generated into build/gen/xid_catalog.c by
 * scripts/gen-xid-catalog at build time, so the table cannot drift from the
 * data.  The policy follows each Xid's immediate resolution bucket; the
 * mapping of every bucket, WORKFLOW_* included, is the table in
 * xid_policy.c.  An Xid that is not in the catalog is recorded and flagged
 * unknown, never isolated by default (reasons in xid_policy.c).  A pool
 * overrides per Xid with plan_xid_override_t. */
#ifndef GPUFLEET_PLAN_XID_POLICY_H
#define GPUFLEET_PLAN_XID_POLICY_H

#include <stdbool.h>
#include <stddef.h>

typedef struct plan_xid_entry {
    int code;
    const char *name;          /* NVIDIA's mnemonic, "GPU_HAS_FALLEN_OFF_THE_BUS" */
    const char *category;      /* derived, not NVIDIA's: see data/SOURCES.md */
    const char *description;   /* NVIDIA's Description cell */
    const char *action;        /* immediate resolution bucket; "" when the catalog has none */
    const char *investigatory; /* investigatory bucket text; "" when none */
} plan_xid_entry_t;

/* Generated table, ascending by code. */
extern const plan_xid_entry_t plan_xid_catalog[];
extern const size_t plan_xid_catalog_len;

typedef enum plan_xid_policy {
    PLAN_XID_RECORD = 0, /* store the event, change nothing */
    PLAN_XID_ISOLATE     /* quarantine the host */
} plan_xid_policy_t;

/* Why a verdict came out as it did. */
typedef enum plan_xid_basis {
    PLAN_XID_BY_ACTION = 0, /* the catalog's immediate bucket */
    PLAN_XID_BY_OVERRIDE,   /* the pool's per-Xid override */
    PLAN_XID_NO_ACTION,     /* in the catalog without a bucket (Xid 162-172): recorded */
    PLAN_XID_UNKNOWN        /* not in the catalog: recorded */
} plan_xid_basis_t;

typedef struct plan_xid_override {
    int code;
    plan_xid_policy_t policy;
} plan_xid_override_t;

typedef struct plan_xid_verdict {
    int code;
    const plan_xid_entry_t *entry; /* NULL when not in the catalog (borrowed, static) */
    plan_xid_policy_t policy;
    plan_xid_basis_t basis;
} plan_xid_verdict_t;

/* The catalog row of `code`, or NULL. */
const plan_xid_entry_t *plan_xid_lookup(int code);

/* Default policy of an immediate bucket ("RESET_GPU", "WORKFLOW_XID_48", ...).
 * *known (may be NULL) is false for "" and for a bucket the table does not
 * list; those record. */
plan_xid_policy_t plan_xid_action_policy(const char *action, bool *known);

/* The verdict for `code` under the pool's overrides (ov may be NULL when
 * nov is 0; the first override for the code wins). */
void plan_xid_decide(int code, const plan_xid_override_t *ov, size_t nov, plan_xid_verdict_t *out);

/* NVSwitch SXid: a line stating "Fatal" isolates; "Non-fatal" or a line
 * that states no severity (the "Severity 1 Engine ..." / "Data {...}"
 * continuation lines) records. */
plan_xid_policy_t plan_sxid_policy(bool fatal);

const char *plan_xid_policy_name(plan_xid_policy_t p); /* "isolate" / "record" */
/* "isolate" / "record" (pool specs); false for anything else. */
bool plan_xid_policy_parse(const char *s, plan_xid_policy_t *out);
const char *plan_xid_basis_name(plan_xid_basis_t b); /* "action", "override", ... */

#endif

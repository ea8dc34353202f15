/* Xid catalog lookup and the default isolate-or-record policy (see
 * xid_policy.h).
 *
 * Default policy by NVIDIA's immediate resolution bucket (the part of the
 * CSV's recommended_action before "; investigatory:").  Every bucket in
 * data/xid_catalog.csv is listed; a test fails when the CSV gains one that
 * is not, so a new bucket gets a decision instead of a silent default.
 */
/* clang-format off */
/*
 * | immediate bucket     | Xids                         | policy  | why                              |
 * |----------------------|------------------------------|---------|----------------------------------|
 * | RESET_GPU            | 46 62 64 95 109 110 119 120  | isolate | issue 13: the GPU needs a reset  |
 * |                      | 136 140 143 155 156 158      |         |                                  |
 * | RESTART_BM           | 79                           | isolate | issue 13: machine restart needed |
 * | CONTACT_SUPPORT      | 1-7 9 10 12 ... 142 (62)     | isolate | issue 13; mostly "Unused" codes: |
 * |                      |                              |         | seeing one is a support case     |
 * | RESTART_APP          | 8 11 13 25 31 32 39-41 ...   | record  | issue 13: the application's      |
 * | IGNORE               | 14 37 38 43 44 63 66 ...     | record  | issue 13: NVIDIA says no action  |
 * | RESTART_VM           | 151                          | isolate | a whole-machine restart, as      |
 * |                      |                              |         | RESTART_BM                       |
 * | CHECK_MECHANICALS    | 54                           | isolate | aux power not connected: someone |
 * |                      |                              |         | must touch the machine           |
 * | UPDATE_SWFW          | 78                           | record  | vGPU start error: host software; |
 * |                      |                              |         | the gate checks the stack        |
 * | CHECK_UVM            | 159                          | record  | UVM driver state: software       |
 * | XID_154              | 154                          | record  | informational: another Xid's     |
 * |                      |                              |         | recovery action changed (note 1) |
 * | WORKFLOW_XID_45      | 45                           | record  | cleanup after other errors       |
 * |                      |                              |         | (note 2)                         |
 * | WORKFLOW_XID_48      | 48                           | isolate | uncorrectable DBE ECC (note 3)   |
 * | WORKFLOW_NVLINK_ERR  | 74                           | isolate | NVLink error (note 4)            |
 * | WORKFLOW_NVLINK5_ERR | 144-150                      | isolate | NVLink 5 errors (note 4)         |
 * | (none in catalog)    | 162-172                      | record  | PLAN_XID_NO_ACTION, as unknown   |
 *
 * 1. Xid 154 reports that the recovery action of another Xid changed; that
 *    Xid is judged by its own row.
 * 2. NVIDIA: "Solo: RESTART_FM, Not Solo: IGNORE (follow other Xid)": the
 *    Xid that caused the cleanup decides ("caused by previous Xid N" on
 *    newer drivers).  NVSentinel#1710 saw 672 false "fatal" events on a
 *    288-node fleet from Xid 45 alone.
 * 3. A double-bit error is uncorrectable; NVIDIA's workflow ends in a reset
 *    or an RMA check, and issue 13 isolates on uncorrectable ECC.
 * 4. Multi-GPU jobs on the host fail or slow down; NVIDIA's workflows end
 *    in a reset or field diagnosis, and issue 13 names Xid 74.  The Xid 45s
 *    an NVLink 5 error causes only record (note 2).
 */
/* clang-format on */

/*
 * WORKFLOW_XID_13 (Xid 13) and WORKFLOW_XID_31 (Xid 31) appear only as
 * investigatory buckets; their immediate bucket is RESTART_APP, so they
 * record.  The investigatory bucket is what an operator does next, not a
 * reason to take capacity away.
 *
 * Unknown Xids (not in the catalog, e.g. a newer driver's codes) record and
 * are flagged PLAN_XID_UNKNOWN.  Isolating on the unknown would turn every
 * driver upgrade that adds a benign or application-level Xid into a fleet
 * wide quarantine -- the NVSentinel#1710 storm the other way round -- and
 * quarantine is expensive to undo (drain, diagnostics, gate).  Recording
 * keeps the evidence; a pool that wants a new code to isolate says so with
 * an override, and the events and the GPU samples (ECC, remap failure,
 * missing GPU, fabric) still isolate on their own. */
#include "planner/xid_policy.h"

#include <assert.h>
#include <string.h>

static const struct {
    const char *bucket;
    plan_xid_policy_t policy;
} buckets[] = {
    {"RESET_GPU", PLAN_XID_ISOLATE},
    {"RESTART_BM", PLAN_XID_ISOLATE},
    {"CONTACT_SUPPORT", PLAN_XID_ISOLATE},
    {"RESTART_APP", PLAN_XID_RECORD},
    {"IGNORE", PLAN_XID_RECORD},
    {"RESTART_VM", PLAN_XID_ISOLATE},
    {"CHECK_MECHANICALS", PLAN_XID_ISOLATE},
    {"UPDATE_SWFW", PLAN_XID_RECORD},
    {"CHECK_UVM", PLAN_XID_RECORD},
    {"XID_154", PLAN_XID_RECORD},
    {"WORKFLOW_XID_45", PLAN_XID_RECORD},
    {"WORKFLOW_XID_48", PLAN_XID_ISOLATE},
    {"WORKFLOW_NVLINK_ERR", PLAN_XID_ISOLATE},
    {"WORKFLOW_NVLINK5_ERR", PLAN_XID_ISOLATE},
};

const plan_xid_entry_t *plan_xid_lookup(int code)
{
    size_t lo = 0, hi = plan_xid_catalog_len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = plan_xid_catalog[mid].code;
        if (c == code)
            return &plan_xid_catalog[mid];
        if (c < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

plan_xid_policy_t plan_xid_action_policy(const char *action, bool *known)
{
    for (size_t i = 0; action && i < sizeof buckets / sizeof buckets[0]; i++) {
        if (strcmp(action, buckets[i].bucket) == 0) {
            if (known)
                *known = true;
            return buckets[i].policy;
        }
    }
    if (known)
        *known = false;
    return PLAN_XID_RECORD;
}

void plan_xid_decide(int code, const plan_xid_override_t *ov, size_t nov, plan_xid_verdict_t *out)
{
    assert(out && (ov || nov == 0));
    memset(out, 0, sizeof *out);
    out->code = code;
    out->entry = plan_xid_lookup(code);
    for (size_t i = 0; i < nov; i++) {
        if (ov[i].code == code) {
            out->policy = ov[i].policy;
            out->basis = PLAN_XID_BY_OVERRIDE;
            return;
        }
    }
    if (!out->entry) {
        out->policy = PLAN_XID_RECORD;
        out->basis = PLAN_XID_UNKNOWN;
        return;
    }
    bool known;
    out->policy = plan_xid_action_policy(out->entry->action, &known);
    out->basis = known ? PLAN_XID_BY_ACTION : PLAN_XID_NO_ACTION;
}

plan_xid_policy_t plan_sxid_policy(bool fatal)
{
    return fatal ? PLAN_XID_ISOLATE : PLAN_XID_RECORD;
}

const char *plan_xid_policy_name(plan_xid_policy_t p)
{
    return p == PLAN_XID_ISOLATE ? "isolate" : "record";
}

bool plan_xid_policy_parse(const char *s, plan_xid_policy_t *out)
{
    assert(out);
    if (s && strcmp(s, "isolate") == 0)
        *out = PLAN_XID_ISOLATE;
    else if (s && strcmp(s, "record") == 0)
        *out = PLAN_XID_RECORD;
    else
        return false;
    return true;
}

const char *plan_xid_basis_name(plan_xid_basis_t b)
{
    switch (b) {
    case PLAN_XID_BY_ACTION: return "action";
    case PLAN_XID_BY_OVERRIDE: return "override";
    case PLAN_XID_NO_ACTION: return "no_action";
    case PLAN_XID_UNKNOWN: return "unknown";
    }
    return "?";
}

/* test_xid.c — the generated Xid catalog (build/gen/xid_catalog.c from
 * data/xid_catalog.csv) and the default isolate-or-record policy
 * (planner/xid_policy.c), checked against values read by hand from the CSV. */
#include <string.h>

#include "planner/xid_policy.h"
#include "tests/unit/unit.h"

static void catalog_shape(void)
{
    CHECK(plan_xid_catalog_len == 172); /* Xid 1..172, one row each (data/SOURCES.md) */
    for (size_t i = 0; i < plan_xid_catalog_len; i++) {
        CHECK(plan_xid_catalog[i].code == (int)i + 1);
        CHECK(plan_xid_catalog[i].name[0] != '\0');
        CHECK(plan_xid_lookup((int)i + 1) == &plan_xid_catalog[i]);
    }
    CHECK(plan_xid_lookup(0) == NULL);
    CHECK(plan_xid_lookup(173) == NULL);
    CHECK(plan_xid_lookup(-79) == NULL);
    CHECK(plan_xid_lookup(65535) == NULL);
}

static void catalog_rows(void)
{
    const plan_xid_entry_t *e = plan_xid_lookup(79);
    CHECK(e != NULL);
    CHECK_STR(e->name, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
    CHECK_STR(e->category, "hardware");
    CHECK_STR(e->description, "GPU has fallen off the bus");
    CHECK_STR(e->action, "RESTART_BM");
    CHECK_STR(e->investigatory, "CONTACT_SUPPORT");
    e = plan_xid_lookup(45);
    CHECK(e != NULL);
    CHECK_STR(e->action, "WORKFLOW_XID_45");
    CHECK_STR(e->investigatory, "Solo: RESTART_FM Not Solo: IGNORE (follow other Xid)");
    CHECK(strncmp(e->description, "Preemptive cleanup, due to previous errors", 42) == 0);
    e = plan_xid_lookup(13); /* the mnemonic cell holds two names */
    CHECK(e != NULL);
    CHECK_STR(e->name, "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY");
    CHECK_STR(e->investigatory, "WORKFLOW_XID_13");
    e = plan_xid_lookup(142); /* a bucket without the investigatory part */
    CHECK(e != NULL);
    CHECK_STR(e->action, "CONTACT_SUPPORT");
    CHECK_STR(e->investigatory, "");
    e = plan_xid_lookup(167); /* "(none in catalog)" */
    CHECK(e != NULL);
    CHECK_STR(e->name, "PCIE_FATAL_TIMEOUT");
    CHECK_STR(e->action, "");
    CHECK_STR(plan_xid_lookup(94)->category, "memory");
    CHECK_STR(plan_xid_lookup(74)->action, "WORKFLOW_NVLINK_ERR");
    CHECK_STR(plan_xid_lookup(149)->action, "WORKFLOW_NVLINK5_ERR");
}

/* Every bucket the CSV uses has an explicit entry in the policy table: a
 * new bucket in a catalog update must get a decision. */
static void every_bucket_decided(void)
{
    size_t none = 0;
    for (size_t i = 0; i < plan_xid_catalog_len; i++) {
        const char *a = plan_xid_catalog[i].action;
        bool known = false;
        (void)plan_xid_action_policy(a, &known);
        if (a[0] == '\0')
            none++;
        else
            CHECK(known);
    }
    CHECK(none == 11); /* Xid 162..172 */
}

static plan_xid_policy_t pol(int code)
{
    plan_xid_verdict_t v;
    plan_xid_decide(code, NULL, 0, &v);
    return v.policy;
}

static void default_policy(void)
{
    /* issue 13's examples: 79 isolates; 13, 31, 43, 45 record */
    CHECK(pol(79) == PLAN_XID_ISOLATE);
    CHECK(pol(13) == PLAN_XID_RECORD);
    CHECK(pol(31) == PLAN_XID_RECORD);
    CHECK(pol(43) == PLAN_XID_RECORD);
    CHECK(pol(45) == PLAN_XID_RECORD);
    /* per the catalog's buckets */
    CHECK(pol(48) == PLAN_XID_ISOLATE); /* WORKFLOW_XID_48 */
    CHECK(pol(63) == PLAN_XID_RECORD);  /* IGNORE: a row was remapped */
    CHECK(pol(64) == PLAN_XID_ISOLATE); /* RESET_GPU: remapping failed */
    CHECK(pol(74) == PLAN_XID_ISOLATE); /* WORKFLOW_NVLINK_ERR */
    CHECK(pol(94) == PLAN_XID_RECORD);  /* RESTART_APP: contained */
    CHECK(pol(95) == PLAN_XID_ISOLATE); /* RESET_GPU: uncontained */
    CHECK(pol(92) == PLAN_XID_RECORD);  /* IGNORE */
    CHECK(pol(109) == PLAN_XID_ISOLATE);
    CHECK(pol(119) == PLAN_XID_ISOLATE);
    CHECK(pol(145) == PLAN_XID_ISOLATE); /* WORKFLOW_NVLINK5_ERR */
    CHECK(pol(149) == PLAN_XID_ISOLATE);
    CHECK(pol(151) == PLAN_XID_ISOLATE); /* RESTART_VM */
    CHECK(pol(54) == PLAN_XID_ISOLATE);  /* CHECK_MECHANICALS */
    CHECK(pol(78) == PLAN_XID_RECORD);   /* UPDATE_SWFW */
    CHECK(pol(154) == PLAN_XID_RECORD);  /* XID_154 */
    CHECK(pol(159) == PLAN_XID_RECORD);  /* CHECK_UVM */
    CHECK(pol(1) == PLAN_XID_ISOLATE);   /* CONTACT_SUPPORT */
}

static void unknown_and_no_action(void)
{
    plan_xid_verdict_t v;
    plan_xid_decide(999, NULL, 0, &v);
    CHECK(v.policy == PLAN_XID_RECORD && v.basis == PLAN_XID_UNKNOWN && v.entry == NULL);
    CHECK_STR(plan_xid_basis_name(v.basis), "unknown");
    plan_xid_decide(0, NULL, 0, &v);
    CHECK(v.policy == PLAN_XID_RECORD && v.basis == PLAN_XID_UNKNOWN);
    plan_xid_decide(167, NULL, 0, &v);
    CHECK(v.policy == PLAN_XID_RECORD && v.basis == PLAN_XID_NO_ACTION && v.entry != NULL);
    plan_xid_decide(79, NULL, 0, &v);
    CHECK(v.basis == PLAN_XID_BY_ACTION && v.code == 79);
    bool known = true;
    CHECK(plan_xid_action_policy("NEW_BUCKET", &known) == PLAN_XID_RECORD && !known);
    CHECK(plan_xid_action_policy(NULL, &known) == PLAN_XID_RECORD && !known);
    CHECK(plan_xid_action_policy("reset_gpu", &known) == PLAN_XID_RECORD && !known);
}

static void overrides(void)
{
    const plan_xid_override_t ov[] = {{79, PLAN_XID_RECORD},
                                      {13, PLAN_XID_ISOLATE},
                                      {999, PLAN_XID_ISOLATE},
                                      {13, PLAN_XID_RECORD}};
    plan_xid_verdict_t v;
    plan_xid_decide(79, ov, 4, &v);
    CHECK(v.policy == PLAN_XID_RECORD && v.basis == PLAN_XID_BY_OVERRIDE);
    plan_xid_decide(13, ov, 4, &v); /* the first override wins */
    CHECK(v.policy == PLAN_XID_ISOLATE && v.basis == PLAN_XID_BY_OVERRIDE);
    plan_xid_decide(999, ov, 4, &v);
    CHECK(v.policy == PLAN_XID_ISOLATE && v.entry == NULL);
    plan_xid_decide(64, ov, 4, &v);
    CHECK(v.policy == PLAN_XID_ISOLATE && v.basis == PLAN_XID_BY_ACTION);
}

static void names_and_sxid(void)
{
    plan_xid_policy_t p = PLAN_XID_RECORD;
    CHECK(plan_xid_policy_parse("isolate", &p) && p == PLAN_XID_ISOLATE);
    CHECK(plan_xid_policy_parse("record", &p) && p == PLAN_XID_RECORD);
    CHECK(!plan_xid_policy_parse("Isolate", &p));
    CHECK(!plan_xid_policy_parse("", &p));
    CHECK(!plan_xid_policy_parse(NULL, &p));
    CHECK_STR(plan_xid_policy_name(PLAN_XID_ISOLATE), "isolate");
    CHECK_STR(plan_xid_policy_name(PLAN_XID_RECORD), "record");
    CHECK(plan_sxid_policy(true) == PLAN_XID_ISOLATE);
    CHECK(plan_sxid_policy(false) == PLAN_XID_RECORD);
}

UNIT_SUITE(xid_tests) = {
    {"xid catalog: 172 rows, ascending, lookup", catalog_shape},
    {"xid catalog: rows as in the CSV", catalog_rows},
    {"xid policy: every bucket in the CSV is decided", every_bucket_decided},
    {"xid policy: defaults per bucket", default_policy},
    {"xid policy: unknown and bucket-less codes record", unknown_and_no_action},
    {"xid policy: pool overrides", overrides},
    {"xid policy: names, SXid severity", names_and_sxid},
    UNIT_END};

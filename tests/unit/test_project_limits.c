/* test_project_limits.c — planner/project_limits.c: the GPU quota, the budget's refusal
 * of new hosts and provisionings, and a credential's binding (docs/projects.md). */
#include "planner/project_limits.h"
#include "unit.h"

#define P_A "6a0e2d0e-7c6e-4f1e-8e0a-3f1b9d1c2b22"
#define P_B "0b7c1f44-1a55-4bde-9a86-0e8c0c7a1a11"

static void quota(void)
{
    /* quota 8, pool gpu_count 2: the fourth host fits exactly, the fifth does not */
    CHECK(plan_quota_allows(8, 6, 2) == 1);
    CHECK(plan_quota_allows(8, 8, 2) == 0);
    CHECK(plan_quota_allows(8, 7, 2) == 0);
    CHECK(plan_quota_allows(8, 0, 8) == 1);
    CHECK(plan_quota_allows(8, 0, 9) == 0);
    /* no quota for the model: never capped */
    CHECK(plan_quota_allows(-1, 1000000, 8) == 1);
    /* a quota of 0 refuses every GPU */
    CHECK(plan_quota_allows(0, 0, 1) == 0);
    /* an act that adds nothing passes even over a quota lowered below usage */
    CHECK(plan_quota_allows(4, 8, 0) == 1);
    CHECK(plan_quota_allows(4, 8, 1) == 0);
}

static void budget(void)
{
    struct plan_budget_facts f = {"refuse_new", 1, 1, 1, 1};
    CHECK(plan_budget_refuses_new(&f) == 1);
    f.on_exhausted = "stop_idle"; /* stops idle hosts and refuses new ones too */
    CHECK(plan_budget_refuses_new(&f) == 1);
    f.on_exhausted = "notify";
    CHECK(plan_budget_refuses_new(&f) == 0);
    f.on_exhausted = "refuse_new";
    f.exhausted = 0;
    CHECK(plan_budget_refuses_new(&f) == 0);
    f.exhausted = 1;
    f.current_month = 0; /* last month's spend: a new month starts afresh */
    CHECK(plan_budget_refuses_new(&f) == 0);
    f.current_month = 1;
    f.has_spend = 0; /* the pass has not run yet */
    CHECK(plan_budget_refuses_new(&f) == 0);
    f.has_spend = 1;
    f.has_budget = 0; /* the budget was removed since */
    CHECK(plan_budget_refuses_new(&f) == 0);
    f.has_budget = 1;
    f.on_exhausted = NULL;
    CHECK(plan_budget_refuses_new(&f) == 0);
}

static void credential(void)
{
    struct plan_credential_facts f = {P_A, P_A, NULL, NULL};
    CHECK(plan_credential_allows(&f, "ubuntu", "10.1.2.3") == PLAN_CREDENTIAL_OK);
    f.pool_project = P_B;
    CHECK(plan_credential_allows(&f, "ubuntu", "10.1.2.3") == PLAN_CREDENTIAL_OTHER_PROJECT);
    f.pool_project = NULL;
    CHECK(plan_credential_allows(&f, "ubuntu", "10.1.2.3") == PLAN_CREDENTIAL_OTHER_PROJECT);
    f.pool_project = P_A;
    /* login users: exact items of the list, not prefixes */
    f.allowed_users = "gpufleet,ubuntu";
    CHECK(plan_credential_allows(&f, "ubuntu", "10.1.2.3") == PLAN_CREDENTIAL_OK);
    CHECK(plan_credential_allows(&f, "gpufleet", "10.1.2.3") == PLAN_CREDENTIAL_OK);
    CHECK(plan_credential_allows(&f, "root", "10.1.2.3") == PLAN_CREDENTIAL_USER);
    CHECK(plan_credential_allows(&f, "ubunt", "10.1.2.3") == PLAN_CREDENTIAL_USER);
    CHECK(plan_credential_allows(&f, "gpu", "10.1.2.3") == PLAN_CREDENTIAL_USER);
    f.allowed_users = "";
    CHECK(plan_credential_allows(&f, "ubuntu", "10.1.2.3") == PLAN_CREDENTIAL_USER);
    f.allowed_users = "ubuntu";
    /* addresses: inside one of the CIDRs */
    f.allowed_cidrs = "10.0.0.0/8,192.168.1.0/24";
    CHECK(plan_credential_allows(&f, "ubuntu", "10.1.2.3") == PLAN_CREDENTIAL_OK);
    CHECK(plan_credential_allows(&f, "ubuntu", "192.168.1.77") == PLAN_CREDENTIAL_OK);
    CHECK(plan_credential_allows(&f, "ubuntu", "192.168.2.1") == PLAN_CREDENTIAL_ADDRESS);
    CHECK(plan_credential_allows(&f, "ubuntu", "127.0.0.1") == PLAN_CREDENTIAL_ADDRESS);
    /* the user is checked before the address */
    CHECK(plan_credential_allows(&f, "root", "127.0.0.1") == PLAN_CREDENTIAL_USER);
    /* none allowed, or a malformed list: fail closed */
    f.allowed_cidrs = "";
    CHECK(plan_credential_allows(&f, "ubuntu", "10.1.2.3") == PLAN_CREDENTIAL_ADDRESS);
    f.allowed_cidrs = "10.0.0.0/99";
    CHECK(plan_credential_allows(&f, "ubuntu", "10.1.2.3") == PLAN_CREDENTIAL_ADDRESS);
    f.allowed_cidrs = "fd00::/8";
    CHECK(plan_credential_allows(&f, "ubuntu", "fd00::1") == PLAN_CREDENTIAL_OK);
    CHECK(plan_credential_allows(&f, "ubuntu", "10.1.2.3") == PLAN_CREDENTIAL_ADDRESS);
}

UNIT_SUITE(project_limits_tests) = {
    {"project limits: the GPU quota (a lowered quota refuses only additions)", quota},
    {"project limits: an exhausted budget refuses new hosts under refuse_new or stop_idle", budget},
    {"project limits: a credential's project, login users and addresses", credential},
    UNIT_END,
};

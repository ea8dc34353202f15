/* project_limits.h — what a project's limits allow a host (pure logic, no I/O): the GPU
 * quota, the monthly budget, and the binding of a credential to its project, its login
 * users and its addresses (docs/projects.md). service/ reads the typed rows
 * (db/projects.h, db/hosts.h) in the command's transaction — the quota's with the
 * project's row locked — and asks these; each refusal maps to one 409 in the API. */
#ifndef GPUFLEET_PLAN_PROJECT_LIMITS_H
#define GPUFLEET_PLAN_PROJECT_LIMITS_H

/* ---- the GPU quota ----
 * A project's hosts hold their pool's gpu_count of the pool's model from registration
 * until they are stopped or deleted. held: the GPUs of the model its hosts hold now,
 * leaving out the host the act concerns; limit: the quota of the model (-1: none);
 * adding: the GPUs the act makes that host hold (0: the act adds none). An act that adds
 * nothing is never refused, even over a quota lowered below usage. */
int plan_quota_allows(long limit, long held, long adding);

/* ---- the budget ----
 * The project's budget settings and the spend its budget pass last computed. */
struct plan_budget_facts {
    const char *on_exhausted; /* notify, refuse_new or stop_idle */
    int has_budget;           /* budget_monthly is set */
    int has_spend;            /* a project_spend row exists */
    int current_month;        /* that row is for the current UTC month */
    int exhausted;            /* and says the spend reached the budget */
};
/* 1 when a new host or a provisioning is refused: the budget is exhausted this month and
 * on_exhausted is refuse_new or stop_idle (which refuses new hosts too, and also stops
 * idle ones). A spend row of an earlier month, or none, never refuses. */
int plan_budget_refuses_new(const struct plan_budget_facts *f);

/* ---- the credential's binding ----
 * A host may use only a credential of its pool's project, with a login user in the
 * credential's allowed_users and an address in its allowed_cidrs (each NULL: any). */
struct plan_credential_facts {
    const char *credential_project; /* the credential's project id */
    const char *pool_project;       /* the project of the pool the host is (or goes) in */
    const char *allowed_users;      /* comma-separated login users, NULL: any ("": none) */
    const char *allowed_cidrs;      /* comma-separated CIDRs, NULL: any ("": none) */
};
enum plan_credential_answer {
    PLAN_CREDENTIAL_OK = 0,
    PLAN_CREDENTIAL_OTHER_PROJECT, /* the credential belongs to another project */
    PLAN_CREDENTIAL_USER,          /* the login user is not in allowed_users */
    PLAN_CREDENTIAL_ADDRESS,       /* the address lies in none of allowed_cidrs */
};
/* The first rule the host's user and address break, in this order: project, user,
 * address. A malformed CIDR list allows no address (fail closed). */
enum plan_credential_answer plan_credential_allows(const struct plan_credential_facts *f,
                                                   const char *user, const char *address);

#endif

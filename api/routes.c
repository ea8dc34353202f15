/* routes.c — the route table and matcher. The OpenAPI document lists exactly these
 * (method, path) pairs; tests/api/routes.test.js holds the two together. */
#include "api/routes.h"

#include <stdlib.h>
#include <string.h>

#include "api/audit.h"
#include "api/baselines.h"
#include "api/bottlenecks.h"
#include "api/briefs.h"
#include "api/costs.h"
#include "api/credentials.h"
#include "api/drills.h"
#include "api/events.h"
#include "api/gates.h"
#include "api/gpu_models.h"
#include "api/health.h"
#include "api/hosts.h"
#include "api/metrics.h"
#include "api/placement.h"
#include "api/pools.h"
#include "api/projects.h"
#include "api/recommend.h"
#include "api/recovery.h"
#include "api/rollouts.h"
#include "api/service.h"
#include "api/sizing.h"
#include "api/stacks.h"
#include "api/stop.h"
#include "api/tokens.h"
#include "api/ui.h"
#include "api/webhooks.h"
#include "api/work_reports.h"

/* ROUTE(method, path, handler, roles, flags, file): the handler's name is kept as text
 * (the OpenAPI operationId of the route is that name) with the file that defines it
 * (`gpufleetd routes` prints both; tests/unit/test_routes.c checks the file). */
#define ROUTE(m, p, h, roles, flags, file) \
    {                                      \
        m, p, h, roles, flags, #h, file    \
    }

const struct api_route api_routes[] = {
    ROUTE("GET", "/healthz", api_healthz, 0, ROUTE_PUBLIC | ROUTE_PROBE, "api/service.c"),
    ROUTE("GET", "/readyz", api_readyz, 0, ROUTE_PUBLIC | ROUTE_PROBE, "api/service.c"),
    ROUTE("GET", "/metrics", api_metrics, 0, ROUTE_PUBLIC | ROUTE_PROBE, "api/metrics_serve.c"),
    ROUTE("GET", "/openapi.yaml", api_openapi, 0, ROUTE_PUBLIC, "api/service.c"),
    ROUTE("GET", "/ui", api_ui_redirect, 0, ROUTE_PUBLIC | ROUTE_UI, "api/ui.c"),
    ROUTE("GET", "/ui/", api_ui_index, 0, ROUTE_PUBLIC | ROUTE_UI, "api/ui.c"),
    ROUTE("GET", "/ui/{file}", api_ui_file, 0, ROUTE_PUBLIC | ROUTE_UI, "api/ui.c"),
    ROUTE("GET", "/v1/audit-events", api_audit_list, ROLES_ADMIN, 0, "api/audit.c"),
    ROUTE("GET", "/v1/audit-events/{id}", api_audit_get, ROLES_ADMIN, 0, "api/audit.c"),
    ROUTE("GET", "/v1/me", api_me, ROLES_READ | ROLE_REPORTER, 0, "api/projects.c"),
    ROUTE("GET", "/v1/projects", api_projects_list, ROLES_READ, 0, "api/projects.c"),
    ROUTE("POST", "/v1/projects", api_projects_create, ROLES_ADMIN, ROUTE_BODY | ROUTE_MUTATES,
          "api/projects.c"),
    ROUTE("GET", "/v1/projects/{id}", api_projects_get, ROLES_READ, 0, "api/projects.c"),
    ROUTE("PATCH", "/v1/projects/{id}", api_projects_patch, ROLES_ADMIN, ROUTE_BODY | ROUTE_MUTATES,
          "api/projects.c"),
    ROUTE("DELETE", "/v1/projects/{id}", api_projects_delete, ROLES_ADMIN, ROUTE_MUTATES,
          "api/projects.c"),
    ROUTE("GET", "/v1/projects/{id}/members", api_project_members_list, ROLES_ADMIN, 0,
          "api/projects.c"),
    ROUTE("PUT", "/v1/projects/{id}/members/{subject}", api_project_members_put, ROLES_ADMIN,
          ROUTE_BODY | ROUTE_MUTATES, "api/projects.c"),
    ROUTE("DELETE", "/v1/projects/{id}/members/{subject}", api_project_members_delete, ROLES_ADMIN,
          ROUTE_MUTATES, "api/projects.c"),
    ROUTE("GET", "/v1/gpu-models", api_gpu_models_list, ROLES_READ, 0, "api/gpu_models.c"),
    ROUTE("POST", "/v1/gpu-models", api_gpu_models_create, ROLES_ADMIN, ROUTE_BODY | ROUTE_MUTATES,
          "api/gpu_models.c"),
    ROUTE("GET", "/v1/gpu-models/{key}", api_gpu_models_get, ROLES_READ, 0, "api/gpu_models.c"),
    ROUTE("PATCH", "/v1/gpu-models/{key}", api_gpu_models_patch, ROLES_ADMIN,
          ROUTE_BODY | ROUTE_MUTATES, "api/gpu_models.c"),
    ROUTE("GET", "/v1/briefs", api_briefs_list, ROLES_READ, 0, "api/briefs.c"),
    ROUTE("POST", "/v1/briefs", api_briefs_create, ROLES_WRITE, ROUTE_BODY | ROUTE_MUTATES,
          "api/briefs.c"),
    ROUTE("GET", "/v1/briefs/{id}", api_briefs_get, ROLES_READ, 0, "api/briefs.c"),
    ROUTE("PUT", "/v1/briefs/{id}", api_briefs_replace, ROLES_WRITE, ROUTE_BODY | ROUTE_MUTATES,
          "api/briefs.c"),
    ROUTE("DELETE", "/v1/briefs/{id}", api_briefs_delete, ROLES_ADMIN, ROUTE_MUTATES,
          "api/briefs.c"),
    ROUTE("GET", "/v1/briefs/{id}/sizing", api_briefs_sizing, ROLES_READ, 0, "api/sizing.c"),
    ROUTE("GET", "/v1/briefs/{id}/placement", api_briefs_placement, ROLES_READ, 0,
          "api/placement.c"),
    ROUTE("POST", "/v1/sizing", api_sizing, ROLES_READ, ROUTE_BODY, "api/sizing.c"),
    ROUTE("GET", "/v1/stacks", api_stacks_list, ROLES_READ, 0, "api/stacks.c"),
    ROUTE("POST", "/v1/stacks", api_stacks_create, ROLES_WRITE, ROUTE_BODY | ROUTE_MUTATES,
          "api/stacks.c"),
    ROUTE("GET", "/v1/stacks/{id}", api_stacks_get, ROLES_READ, 0, "api/stacks.c"),
    ROUTE("PATCH", "/v1/stacks/{id}", api_stacks_patch, ROLES_ADMIN, ROUTE_BODY | ROUTE_MUTATES,
          "api/stacks.c"),
    ROUTE("GET", "/v1/stacks/{id}/lineage", api_stacks_lineage, ROLES_READ, 0, "api/stacks.c"),
    ROUTE("GET", "/v1/credentials", api_credentials_list, ROLES_ADMIN, 0, "api/credentials.c"),
    ROUTE("POST", "/v1/credentials", api_credentials_create, ROLES_ADMIN,
          ROUTE_BODY | ROUTE_MUTATES, "api/credentials.c"),
    ROUTE("GET", "/v1/credentials/{id}", api_credentials_get, ROLES_ADMIN, 0, "api/credentials.c"),
    ROUTE("PATCH", "/v1/credentials/{id}", api_credentials_patch, ROLES_ADMIN,
          ROUTE_BODY | ROUTE_MUTATES, "api/credentials.c"),
    ROUTE("DELETE", "/v1/credentials/{id}", api_credentials_delete, ROLES_ADMIN, ROUTE_MUTATES,
          "api/credentials.c"),
    ROUTE("GET", "/v1/pools", api_pools_list, ROLES_READ, 0, "api/pools.c"),
    ROUTE("POST", "/v1/pools", api_pools_create, ROLES_ADMIN, ROUTE_BODY | ROUTE_MUTATES,
          "api/pools.c"),
    ROUTE("GET", "/v1/pools/{id}", api_pools_get, ROLES_READ, 0, "api/pools.c"),
    ROUTE("POST", "/v1/pools/{id}/rollouts", api_pools_rollouts_create, ROLES_WRITE,
          ROUTE_BODY | ROUTE_MUTATES, "api/rollouts.c"),
    ROUTE("GET", "/v1/rollouts", api_rollouts_list, ROLES_READ, 0, "api/rollouts.c"),
    ROUTE("GET", "/v1/rollouts/{id}", api_rollouts_get, ROLES_READ, 0, "api/rollouts.c"),
    ROUTE("POST", "/v1/rollouts/{id}/pause", api_rollouts_pause, ROLES_WRITE, ROUTE_MUTATES,
          "api/rollouts.c"),
    ROUTE("POST", "/v1/rollouts/{id}/resume", api_rollouts_resume, ROLES_WRITE, ROUTE_MUTATES,
          "api/rollouts.c"),
    ROUTE("POST", "/v1/rollouts/{id}/abort", api_rollouts_abort, ROLES_WRITE, ROUTE_MUTATES,
          "api/rollouts.c"),
    ROUTE("PUT", "/v1/pools/{id}", api_pools_replace, ROLES_ADMIN, ROUTE_BODY | ROUTE_MUTATES,
          "api/pools.c"),
    ROUTE("DELETE", "/v1/pools/{id}", api_pools_delete, ROLES_ADMIN, ROUTE_MUTATES, "api/pools.c"),
    ROUTE("GET", "/v1/hosts", api_hosts_list, ROLES_READ, 0, "api/hosts.c"),
    ROUTE("POST", "/v1/hosts", api_hosts_create, ROLES_WRITE, ROUTE_BODY | ROUTE_MUTATES,
          "api/hosts.c"),
    ROUTE("GET", "/v1/hosts/{id}", api_hosts_get, ROLES_READ, 0, "api/hosts.c"),
    ROUTE("PATCH", "/v1/hosts/{id}", api_hosts_patch, ROLES_WRITE, ROUTE_BODY | ROUTE_MUTATES,
          "api/hosts.c"),
    ROUTE("DELETE", "/v1/hosts/{id}", api_hosts_delete, ROLES_ADMIN, ROUTE_MUTATES, "api/hosts.c"),
    ROUTE("POST", "/v1/hosts/{id}/provision", api_hosts_provision, ROLES_WRITE,
          ROUTE_BODY | ROUTE_MUTATES, "api/hosts.c"),
    ROUTE("POST", "/v1/hosts/{id}/gate", api_hosts_gate, ROLES_WRITE, ROUTE_MUTATES, "api/gates.c"),
    ROUTE("POST", "/v1/hosts/{id}/drain", api_hosts_drain, ROLES_WRITE,
          ROUTE_BODY_OPTIONAL | ROUTE_MUTATES, "api/gates.c"),
    ROUTE("POST", "/v1/hosts/{id}/resume", api_hosts_resume, ROLES_WRITE,
          ROUTE_BODY_OPTIONAL | ROUTE_MUTATES, "api/gates.c"),
    ROUTE("POST", "/v1/hosts/{id}/release", api_hosts_release, ROLES_ADMIN,
          ROUTE_BODY | ROUTE_MUTATES, "api/gates.c"),
    ROUTE("POST", "/v1/hosts/{id}/diagnostics", api_hosts_diagnostics, ROLES_WRITE,
          ROUTE_BODY | ROUTE_MUTATES, "api/gates.c"),
    ROUTE("POST", "/v1/hosts/{id}/stop", api_hosts_stop, ROLES_WRITE, ROUTE_BODY | ROUTE_MUTATES,
          "api/stop.c"),
    ROUTE("POST", "/v1/hosts/{id}/drills", api_hosts_drill, ROLES_WRITE, ROUTE_MUTATES,
          "api/drills.c"),
    ROUTE("GET", "/v1/hosts/{id}/drills", api_hosts_drills, ROLES_READ, 0, "api/drills.c"),
    ROUTE("GET", "/v1/drills", api_drills_list, ROLES_READ, 0, "api/drills.c"),
    ROUTE("GET", "/v1/drills/{id}", api_drills_get, ROLES_READ, 0, "api/drills.c"),
    ROUTE("GET", "/v1/hosts/{id}/gate-runs", api_hosts_gate_runs, ROLES_READ, 0, "api/gates.c"),
    ROUTE("GET", "/v1/hosts/{id}/readiness", api_hosts_readiness, ROLES_READ, 0, "api/gates.c"),
    ROUTE("GET", "/v1/hosts/{id}/recoveries", api_hosts_recoveries, ROLES_READ, 0,
          "api/recovery.c"),
    ROUTE("GET", "/v1/hosts/{id}/health", api_hosts_health, ROLES_READ, 0, "api/health.c"),
    ROUTE("GET", "/v1/hosts/{id}/samples", api_hosts_samples, ROLES_READ, 0, "api/health.c"),
    ROUTE("GET", "/v1/gpus", api_gpus_list, ROLES_READ, 0, "api/health.c"),
    ROUTE("GET", "/v1/gpus/{uuid}/events", api_gpus_events, ROLES_READ, 0, "api/health.c"),
    ROUTE("GET", "/v1/gate-runs", api_gate_runs_list, ROLES_READ, 0, "api/gates.c"),
    ROUTE("GET", "/v1/gate-runs/{id}", api_gate_runs_get, ROLES_READ, 0, "api/gates.c"),
    ROUTE("GET", "/v1/gate-runs/{id}/baseline-comparison", api_gate_runs_comparison, ROLES_READ, 0,
          "api/baselines.c"),
    ROUTE("GET", "/v1/jobs", api_jobs_list, ROLES_READ, 0, "api/hosts.c"),
    ROUTE("GET", "/v1/jobs/{id}", api_jobs_get, ROLES_READ, 0, "api/hosts.c"),
    ROUTE("POST", "/v1/jobs/{id}/cancel", api_jobs_cancel, ROLES_WRITE, ROUTE_MUTATES,
          "api/hosts.c"),
    ROUTE("GET", "/v1/baselines", api_baselines_list, ROLES_READ, 0, "api/baselines.c"),
    ROUTE("GET", "/v1/baselines/{id}", api_baselines_get, ROLES_READ, 0, "api/baselines.c"),
    ROUTE("GET", "/v1/work-reports", api_work_reports_list, ROLES_READ, 0, "api/work_reports.c"),
    ROUTE("POST", "/v1/work-reports", api_work_reports_create, ROLE_REPORTER | ROLES_WRITE,
          ROUTE_BODY | ROUTE_MUTATES, "api/work_reports.c"),
    ROUTE("GET", "/v1/costs", api_costs, ROLES_READ, 0, "api/costs.c"),
    ROUTE("GET", "/v1/recommendations", api_recommendations, ROLES_READ, 0, "api/recommend.c"),
    ROUTE("GET", "/v1/bottlenecks", api_bottlenecks, ROLES_READ, 0, "api/bottlenecks.c"),
    ROUTE("GET", "/v1/events", api_events_stream, ROLES_READ, ROUTE_TICKET, "api/events.c"),
    ROUTE("POST", "/v1/event-tickets", api_event_tickets_create, ROLES_READ, 0, "api/events.c"),
    ROUTE("POST", "/v1/tokens/revoke", api_tokens_revoke, ROLES_ADMIN, ROUTE_BODY | ROUTE_MUTATES,
          "api/tokens.c"),
    ROUTE("GET", "/v1/webhooks", api_webhooks_list, ROLES_ADMIN, 0, "api/webhooks.c"),
    ROUTE("POST", "/v1/webhooks", api_webhooks_create, ROLES_ADMIN, ROUTE_BODY | ROUTE_MUTATES,
          "api/webhooks.c"),
    ROUTE("GET", "/v1/webhooks/{id}", api_webhooks_get, ROLES_ADMIN, 0, "api/webhooks.c"),
    ROUTE("DELETE", "/v1/webhooks/{id}", api_webhooks_delete, ROLES_ADMIN, ROUTE_MUTATES,
          "api/webhooks.c"),
    ROUTE("GET", "/v1/webhooks/{id}/deliveries", api_webhooks_deliveries, ROLES_ADMIN, 0,
          "api/webhooks.c"),
    ROUTE("POST", "/v1/webhooks/{id}/replay", api_webhooks_replay, ROLES_ADMIN,
          ROUTE_BODY | ROUTE_MUTATES, "api/webhooks.c"),
};
const size_t api_routes_count = sizeof api_routes / sizeof api_routes[0];
/* Each route has its own metrics label (api/metrics.c). */
_Static_assert(sizeof api_routes / sizeof api_routes[0] <= METRICS_MAX_ROUTES,
               "raise METRICS_MAX_ROUTES");

/* Compares one template against path; on success stores parameters. Returns 1 on match. */
static int path_matches(const char *tmpl, const char *path, char **params, int *nparams)
{
    int n = 0;
    const char *t = tmpl, *p = path;
    while (*t && *p) {
        if (*t == '{') {
            const char *tend = strchr(t, '}');
            const char *pend = strchr(p, '/');
            if (pend == NULL)
                pend = p + strlen(p);
            if (pend == p || n == API_MAX_PARAMS)
                goto fail;
            if (params != NULL)
                params[n] = strndup(p, (size_t)(pend - p));
            n++;
            t = tend + 1;
            p = pend;
            continue;
        }
        if (*t != *p)
            goto fail;
        t++;
        p++;
    }
    if (*t != '\0' || *p != '\0')
        goto fail;
    *nparams = n;
    return 1;
fail:
    if (params != NULL)
        for (int i = 0; i < n; i++) {
            free(params[i]);
            params[i] = NULL;
        }
    return 0;
}

enum api_match api_route_match(const char *method, const char *path, const struct api_route **route,
                               char **params, int *nparams, char *allow, size_t allowlen,
                               int *label)
{
    int found_path = 0;
    *route = NULL;
    *nparams = 0;
    *label = -1;
    allow[0] = '\0';
    for (size_t i = 0; i < api_routes_count; i++) {
        int n;
        if (!path_matches(api_routes[i].path, path, NULL, &n))
            continue;
        if (!found_path) {
            /* Label: first route sharing this template. */
            *label = (int)i;
            found_path = 1;
        }
        size_t used = strlen(allow);
        if (strstr(allow, api_routes[i].method) == NULL)
            snprintf(allow + used, allowlen - used, "%s%s", used ? ", " : "", api_routes[i].method);
        if (*route == NULL && strcmp(api_routes[i].method, method) == 0) {
            *route = &api_routes[i];
            path_matches(api_routes[i].path, path, params, nparams);
        }
    }
    if (!found_path)
        return MATCH_NO_PATH;
    size_t used = strlen(allow);
    if (strstr(allow, "GET") != NULL && strstr(allow, "HEAD") == NULL)
        snprintf(allow + used, allowlen - used, ", HEAD");
    used = strlen(allow);
    snprintf(allow + used, allowlen - used, ", OPTIONS");
    if (*route == NULL && strcmp(method, "HEAD") == 0) {
        /* HEAD is served by the GET handler; MHD drops the body. */
        for (size_t i = 0; i < api_routes_count; i++)
            if (strcmp(api_routes[i].method, "GET") == 0 &&
                path_matches(api_routes[i].path, path, params, nparams)) {
                *route = &api_routes[i];
                break;
            }
    }
    return *route ? MATCH_OK : MATCH_WRONG_METHOD;
}

/* gate.c — see gate.h. */
#include "planner/gate.h"

#include <stdio.h>
#include <string.h>

const char *const plan_check_status_names[] = {"pass", "fail", "warn", "skip", "timeout"};
const char *const plan_verdict_names[] = {"accept", "isolate", "investigate"};

static int failed(enum plan_check_status s)
{
    return s == PLAN_CHECK_FAIL || s == PLAN_CHECK_TIMEOUT;
}

enum plan_verdict plan_gate_verdict(const struct plan_check_outcome *checks, int n, char *reason,
                                    unsigned long reasonlen)
{
    int hardware = 0, other = 0;
    char hw[256] = "", rest[256] = "";
    for (int i = 0; i < n; i++) {
        if (!failed(checks[i].status))
            continue;
        char *buf = checks[i].hardware_evidence ? hw : rest;
        size_t used = strlen(buf);
        snprintf(buf + used, sizeof hw - used, "%s%s (%s)", used ? ", " : "", checks[i].name,
                 plan_check_status_names[checks[i].status]);
        if (checks[i].hardware_evidence)
            hardware++;
        else
            other++;
    }
    if (hardware > 0) {
        snprintf(reason, reasonlen, "hardware evidence in %s%s%s", hw, other ? "; also " : "",
                 other ? rest : "");
        return PLAN_ISOLATE;
    }
    if (other > 0) {
        snprintf(reason, reasonlen, "failed: %s", rest);
        return PLAN_INVESTIGATE;
    }
    snprintf(reason, reasonlen, "every check passed");
    return PLAN_ACCEPT;
}

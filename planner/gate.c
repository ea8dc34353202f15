/* gate.c — see gate.h. */
#include "planner/gate.h"

#include <stdio.h>
#include <string.h>

const char *const plan_check_status_names[] = {"pass", "fail", "warn", "skip", "timeout"};
const char *const plan_verdict_names[] = {"accept", "isolate", "investigate"};

static int passing(enum plan_check_status s)
{
    return s == PLAN_CHECK_PASS || s == PLAN_CHECK_WARN || s == PLAN_CHECK_SKIP;
}

/* Appends "text" to buf (", "-separated), truncating safely. */
static void add(char *buf, size_t cap, const char *name, const char *what)
{
    size_t used = strlen(buf);
    if (used + 1 < cap)
        snprintf(buf + used, cap - used, "%s%s%s", used ? ", " : "", name, what);
}

enum plan_verdict plan_gate_verdict(const struct plan_check_outcome *checks, int n, char *reason,
                                    unsigned long reasonlen)
{
    char hw[256] = "", rest[256] = "", lost[256] = "";
    if (n <= 0 || checks == NULL) {
        snprintf(reason, reasonlen, "no check was recorded");
        return PLAN_INVESTIGATE;
    }
    for (int i = 0; i < n; i++) {
        const struct plan_check_outcome *c = &checks[i];
        const char *name = c->name ? c->name : "(unnamed check)";
        if (!c->recorded) {
            add(lost, sizeof lost, name, "");
            continue;
        }
        if (passing(c->status))
            continue;
        int known = c->status == PLAN_CHECK_FAIL || c->status == PLAN_CHECK_TIMEOUT;
        char what[32];
        snprintf(what, sizeof what, " (%s)",
                 known ? plan_check_status_names[c->status] : "unknown status");
        add(known && c->hardware_evidence ? hw : rest, sizeof hw, name, what);
    }
    char unrecorded[300] = "";
    if (lost[0])
        snprintf(unrecorded, sizeof unrecorded, "%s ran but could not be recorded", lost);
    if (hw[0]) {
        snprintf(reason, reasonlen, "hardware evidence in %s%s%s%s%s", hw, rest[0] ? "; also " : "",
                 rest, unrecorded[0] ? "; " : "", unrecorded);
        return PLAN_ISOLATE;
    }
    if (rest[0] || unrecorded[0]) {
        snprintf(reason, reasonlen, "%s%s%s%s", rest[0] ? "failed: " : "", rest,
                 rest[0] && unrecorded[0] ? "; " : "", unrecorded);
        return PLAN_INVESTIGATE;
    }
    snprintf(reason, reasonlen, "every check passed");
    return PLAN_ACCEPT;
}

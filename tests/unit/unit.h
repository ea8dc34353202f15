/* unit.h — a tiny test harness: TAP-like lines, then "N passed, N failed". */
#ifndef GPUFLEET_UNIT_H
#define GPUFLEET_UNIT_H

#include <stddef.h>
#include <string.h>

struct unit_test {
    const char *name;
    void (*fn)(void);
};

void unit_fail(const char *file, int line, const char *what);

#define CHECK(cond)                               \
    do {                                          \
        if (!(cond)) {                            \
            unit_fail(__FILE__, __LINE__, #cond); \
            return;                               \
        }                                         \
    } while (0)
#define CHECK_STR(a, b) CHECK((a) != NULL && strcmp((a), (b)) == 0)

#define UNIT_SUITE(name) const struct unit_test name[]
#define UNIT_END   \
    {              \
        NULL, NULL \
    }

extern const struct unit_test util_tests[], jsonspec_tests[], auth_tests[], list_tests[],
    planner_tests[], provision_tests[], gate_tests[], routes_tests[], config_tests[], crypt_tests[],
    sshkey_tests[], costs_tests[], recommend_tests[], gate_property_tests[], host_state_tests[],
    db_tests[], xid_tests[];

extern const struct unit_test webhook_tests[];
extern const struct unit_test oidc_tests[];
extern const struct unit_test jwk_tests[];
extern const struct unit_test health_tests[];
extern const struct unit_test monitor_sample_tests[];
extern const struct unit_test periodic_tests[];
extern const struct unit_test tbucket_tests[];
extern const struct unit_test rl_table_tests[];
extern const struct unit_test dheap_tests[];
extern const struct unit_test idmap_tests[];
extern const struct unit_test ptrset_tests[];
extern const struct unit_test events_sub_tests[];
extern const struct unit_test utf8_tests[];
extern const struct unit_test netpolicy_tests[];
extern const struct unit_test recovery_tests[];
extern const struct unit_test recommend_idle_tests[];
extern const struct unit_test metrics_tests[];
extern const struct unit_test baseline_tests[];
extern const struct unit_test rollout_tests[];
extern const struct unit_test rollouts_api_tests[];
extern const struct unit_test host_command_tests[];
extern const struct unit_test rolemap_tests[];
extern const struct unit_test readiness_tests[];
extern const struct unit_test bandwidth_tests[];
extern const struct unit_test rollout_create_tests[];
extern const struct unit_test components_tests[];
extern const struct unit_test project_limits_tests[];
extern const struct unit_test budget_tests[];
extern const struct unit_test bottleneck_tests[];
extern const struct unit_test recommend_retry_tests[];
extern const struct unit_test gate_storage_tests[];
extern const struct unit_test gate_targeted_tests[];
extern const struct unit_test placement_tests[];

/* A healthy 2× H100 host's outputs (test_gate.c), for the gate's tests. */
struct prov_gate;
extern const char unit_h100_table[], unit_h100_list[], unit_h100_topo[], unit_dd[];
void unit_h100_gate(struct prov_gate *g);

#endif

/* main.c — runs every unit suite; exit status 1 when anything failed. */
#include <stdio.h>

#include "tests/unit/unit.h"

static int current_failed;

void unit_fail(const char *file, int line, const char *what)
{
    printf("    # %s:%d: CHECK(%s) failed\n", file, line, what);
    current_failed = 1;
}

int main(int argc, char **argv)
{
    const struct unit_test *suites[] = {util_tests,
                                        jsonspec_tests,
                                        auth_tests,
                                        list_tests,
                                        routes_tests,
                                        config_tests,
                                        planner_tests,
                                        provision_tests,
                                        gate_tests,
                                        crypt_tests,
                                        sshkey_tests,
                                        costs_tests,
                                        recommend_tests,
                                        gate_property_tests,
                                        host_state_tests,
                                        db_tests,
                                        xid_tests,
                                        webhook_tests,
                                        jwk_tests,
                                        oidc_tests,
                                        health_tests,
                                        monitor_sample_tests,
                                        utf8_tests,
                                        netpolicy_tests,
                                        recovery_tests,
                                        recommend_idle_tests,
                                        metrics_tests,
                                        baseline_tests,
                                        rollout_tests,
                                        rollouts_api_tests,
                                        periodic_tests,
                                        dheap_tests,
                                        idmap_tests,
                                        ptrset_tests,
                                        events_sub_tests,
                                        host_command_tests,
                                        rolemap_tests,
                                        readiness_tests,
                                        rollout_create_tests,
                                        components_tests,
                                        project_limits_tests,
                                        budget_tests,
                                        tbucket_tests,
                                        rl_table_tests,
                                        bottleneck_tests,
                                        recommend_retry_tests,
                                        bandwidth_tests,
                                        gate_storage_tests,
                                        gate_targeted_tests,
                                        placement_tests};
    int passed = 0, failed = 0;
    for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
        for (const struct unit_test *t = suites[s]; t->name; t++) {
            if (argc > 1 && strstr(t->name, argv[1]) == NULL)
                continue;
            current_failed = 0;
            t->fn();
            printf("%s - %s\n", current_failed ? "not ok" : "ok", t->name);
            if (current_failed)
                failed++;
            else
                passed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

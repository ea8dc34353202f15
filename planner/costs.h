/* costs.h — cost per completed work (docs/product.md §6). Pure arithmetic: no I/O.
 *
 *   compute        = price_per_hour × held hours
 *   storage        = average reported storage_gb × storage_price_per_gb_month
 *                    × held hours / 730 (a month is 730 h)
 *   data_movement  = bytes_moved / 1e9 (decimal GB) × egress_price_per_gb
 *   overhead       = overhead_pct % of (compute + storage + data_movement)
 *   total          = compute + storage + data_movement + overhead
 *   failed_retried = total × (failed + retried) / (completed + failed + retried):
 *                    a part of the total, never added on top of it.
 *
 * Rounding: each component of a group is summed over its hosts at full precision, then
 * rounded half away from zero to the cent, once. The total is the sum of the rounded
 * components (so the figures add up as printed). failed_retried.amount is the rounded
 * total × share, rounded to the cent; share is rounded to 4 decimals (0.0476 = 4.76%).
 * Cost per completed unit is the rounded total ÷ completed units, not rounded. */
#ifndef GPUFLEET_COSTS_H
#define GPUFLEET_COSTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/usage.h"

#define PLAN_HOURS_PER_MONTH 730.0
#define PLAN_BYTES_PER_GB    1e9

/* ---- held time ---- */

/* One recorded state change: from at_us on, the host is in a held state (every state
 * except stopped) or not. */
struct plan_state_change {
    int64_t at_us;
    int held;
};
/* Seconds the host was held within [from_us, to_us), given its changes sorted by time.
 * The state at from_us is the last change at or before it; before the first change
 * (registration) the host did not exist. The last state lasts until now_us: time after
 * now is never counted. */
double plan_held_seconds(const struct plan_state_change *changes, size_t n, int64_t from_us,
                         int64_t to_us, int64_t now_us);

/* ---- money (a pool's prices: struct usage_prices, common/usage.h) ---- */

/* What one slice of a group used within the window: a host, or (grouped by brief) the
 * part of a host attributed to one brief. */
struct plan_usage {
    double held_seconds;
    long reports; /* work reports counted; 0 means no usage data */
    double busy_seconds;
    /* Σ storage_gb × report seconds and Σ report seconds, over the reports that gave
     * storage_gb: their ratio is the time-weighted average storage. */
    double storage_gb_seconds, storage_seconds;
    double bytes_moved;
    double completed[USAGE_UNIT_COUNT], failed[USAGE_UNIT_COUNT], retried[USAGE_UNIT_COUNT];
    int has_unit[USAGE_UNIT_COUNT];
    struct usage_phases phases;     /* the reports that gave phases */
    struct usage_failures failures; /* the reports that classified their failures */
};

/* A group being summed: the unrounded components and the usage. Zero it to start. */
struct plan_cost_acc {
    double compute, storage, data_movement, overhead;
    double held_seconds, busy_seconds;
    long reports;
    double completed[USAGE_UNIT_COUNT], failed[USAGE_UNIT_COUNT], retried[USAGE_UNIT_COUNT];
    int has_unit[USAGE_UNIT_COUNT];
    struct usage_phases phases;
    struct usage_failures failures;
};

/* Adds one slice, priced with its host's pool prices. */
void plan_cost_add(struct plan_cost_acc *acc, const struct usage_prices *p,
                   const struct plan_usage *u);

struct plan_cost {
    double compute, storage, data_movement, overhead, total; /* dollars, to the cent */
    double failed_retried_amount;
    int has_share;               /* 0 when no unit was reported at all */
    double failed_retried_share; /* fraction of total, 4 decimals */
    int has_unit[USAGE_UNIT_COUNT];
    double completed[USAGE_UNIT_COUNT];
    int has_cost_per_unit[USAGE_UNIT_COUNT]; /* 0 when nothing of the unit was completed */
    double cost_per_unit[USAGE_UNIT_COUNT];
    double held_hours, busy_hours;
    int no_usage_data;   /* no work report in the window */
    int has_utilization; /* reports and held time > 0 */
    double utilization;  /* busy ÷ held */
    int has_idle_hours;  /* 0 without usage data: never treated as idle by default */
    double idle_hours;   /* held − busy hours, at least 0 */
};
void plan_cost_finish(const struct plan_cost_acc *acc, struct plan_cost *out);
/* The unit c completed most of (the first in enum order on a tie), or -1 when it
 * reported none. */
int plan_cost_main_unit(const struct plan_cost *c);

/* ---- the cost split by phase ----
 *
 * Over the reports that gave phases only. Their share of the work is their share of busy
 * time: covered = Σ busy_seconds of the reports with phases ÷ Σ busy_seconds of all
 * reports (at most 1). That part of the cost is split among the phases in proportion to
 * the seconds the reports gave them (share = phase seconds ÷ Σ phase seconds); the rest
 * (1 − covered) is not broken down, never guessed from the reports that gave phases:
 *
 *   cost[p]               = total × covered × share[p], to the cent
 *   not_broken_down       = total × (1 − covered), to the cent (each figure is rounded
 *                           on its own: their sum may differ from total by a cent or so)
 *   cost_per_unit[u][p]   = cost per completed unit u × covered × share[p] (not rounded)
 *   per-unit not broken down = cost per completed unit u × (1 − covered)
 *
 * Without busy time (none reported) the coverage is unknown and nothing is split; without
 * phase seconds (no report gave phases, or all gave 0) there are no shares. */
struct plan_cost_phases {
    long reports, of_reports;             /* reports that gave phases, of all reports */
    double busy_seconds, of_busy_seconds; /* their busy seconds, of all busy seconds */
    int has_seconds;                      /* a report gave phases */
    double seconds[USAGE_PHASE_COUNT], total_seconds;
    int has_share;                                             /* total_seconds > 0 */
    double share[USAGE_PHASE_COUNT];                           /* 4 decimals */
    int has_coverage;                                          /* of_busy_seconds > 0 */
    double covered_busy_share;                                 /* 4 decimals */
    int has_split;                                             /* has_share and has_coverage */
    double cost[USAGE_PHASE_COUNT], not_broken_down;           /* dollars, to the cent */
    double cost_per_unit[USAGE_UNIT_COUNT][USAGE_PHASE_COUNT]; /* where has_cost_per_unit */
    double per_unit_not_broken_down[USAGE_UNIT_COUNT];
};
/* The split of c (plan_cost_finish of acc). */
void plan_cost_phases(const struct plan_cost_acc *acc, const struct plan_cost *c,
                      struct plan_cost_phases *out);

/* ---- the cost of failed and retried work split by failure class ----
 *
 * The cost of failed and retried work is the total × (failed + retried) ÷ (completed +
 * failed + retried) (failed_retried above): cost attributed in proportion to units. Each
 * classified unit carries the same cost as any other unit, so with N = completed + failed
 * + retried units of every report:
 *
 *   cost[c]          = total × units[c] ÷ N, to the cent (units[c]: Σ failures.c of the
 *                      reports that classified their failures)
 *   not_broken_down  = total × (failed + retried − Σ units[c]) ÷ N, to the cent: the
 *                      failed and retried units nobody classified (reports without
 *                      failures, and the part of a report's failed + retried that its
 *                      failures leave out), never guessed from the classified ones
 *   share[c]         = units[c] ÷ Σ units[c] (4 decimals): the class's share of the
 *                      classified failure cost
 *   covered_share    = Σ units[c] ÷ (failed + retried) (4 decimals): how much of the
 *                      failed and retried work is classified
 *
 * Without failed or retried units nothing is split (has_split 0); without classified
 * units there are no shares. */
struct plan_cost_failures {
    long reports, of_reports; /* reports that classified failures, of all reports */
    double units, of_units;   /* failed + retried of those reports, of all reports */
    double classified;        /* Σ units[c] */
    double counts[USAGE_FAIL_COUNT];
    int has_share; /* classified > 0 */
    double share[USAGE_FAIL_COUNT];
    int has_split;                                  /* of_units > 0 */
    double covered_share;                           /* 4 decimals */
    double cost[USAGE_FAIL_COUNT], not_broken_down; /* dollars, to the cent */
    int dominant; /* the class with the most units (first on a tie), or -1 */
};
/* The split of c (plan_cost_finish of acc). */
void plan_cost_failures(const struct plan_cost_acc *acc, const struct plan_cost *c,
                        struct plan_cost_failures *out);

/* Rounds half away from zero to the cent (tolerating binary representation error). */
double plan_round_cents(double dollars);
/* Rounds to `places` decimals, the same way. */
double plan_round_to(double x, int places);

/* The part of a host's held seconds attributed to a slice of its reports that covers
 * slice_seconds out of the host_seconds all its reports cover. */
double plan_held_share(double held_seconds, double slice_seconds, double host_seconds);

/* ---- groups ---- */

enum plan_group_by { PLAN_BY_HOST, PLAN_BY_POOL, PLAN_BY_BRIEF, PLAN_BY_PROJECT };
/* "host", "pool", "brief", "project", NULL */
extern const char *const plan_group_by_names[];

/* A group being priced (the hosts and rows it is summed from: common/usage.h). */
struct plan_cost_group {
    const char *id, *name; /* borrowed from the hosts/rows; NULL id: no brief */
    struct plan_cost_acc acc;
};
/* Sums hosts and rows into groups (by host, pool, brief or the host's project); a host
 * neither held (held_seconds 0) nor reporting in the window is left out. rows must be sorted by
 * host, and within a host by brief (equal brief ids adjacent). Grouped by brief, a host's held time
 * is split among the briefs its reports name, in proportion to the seconds their reports cover; a
 * host without reports goes whole to the group without a brief (id NULL). *out is malloc'd (caller
 * frees), in first-seen order. Returns 0, or -1 when out of memory. */
int plan_costs_group(const struct usage_host *hosts, size_t nh, const struct usage_row *rows,
                     size_t nr, enum plan_group_by by, struct plan_cost_group **out,
                     size_t *ngroups);

#endif

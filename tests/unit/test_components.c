/* test_components.c — the composition root's runner (cmd/components.h): started in order,
 * stopped in reverse, on a failed start too; unwanted ones neither start nor stop. */
#include <stdio.h>
#include <string.h>

#include "cmd/components.h"
#include "tests/unit/unit.h"

struct trace {
    char log[256];
    const char *fail; /* the component whose start fails */
    int skip_c;       /* c is not wanted */
};

static void note(struct trace *t, const char *what)
{
    size_t n = strlen(t->log);
    snprintf(t->log + n, sizeof t->log - n, "%s%s", n ? " " : "", what);
}

#define COMPONENT(x)                                          \
    static int start_##x(void *ctx, char *err, size_t errlen) \
    {                                                         \
        struct trace *t = ctx;                                \
        if (t->fail != NULL && strcmp(t->fail, #x) == 0) {    \
            snprintf(err, errlen, "cannot start " #x);        \
            return -1;                                        \
        }                                                     \
        note(t, "+" #x);                                      \
        return 0;                                             \
    }                                                         \
    static void stop_##x(void *ctx)                           \
    {                                                         \
        note(ctx, "-" #x);                                    \
    }
COMPONENT(a)
COMPONENT(b)
COMPONENT(c)
COMPONENT(d)

static int c_wanted(const void *ctx)
{
    return !((const struct trace *)ctx)->skip_c;
}

static const struct cmd_component table[] = {
    {"a", NULL, start_a, stop_a},        {"b", NULL, start_b, NULL}, /* nothing to undo */
    {"b stops", NULL, NULL, stop_b},     {"c", c_wanted, start_c, stop_c},
    {"only a stop", NULL, NULL, stop_d}, {"d", NULL, start_d, stop_d},
};

static void run_with(struct trace *t, int *rc, const char **failed, char *err, size_t errlen)
{
    struct cmd_run run = {table, sizeof table / sizeof table[0], t, {0}};
    *rc = cmd_components_start(&run, failed, err, errlen);
    if (*rc == 0) {
        note(t, "|");
        cmd_components_stop(&run);
        cmd_components_stop(&run); /* a second stop stops nothing */
    }
}

static void order(void)
{
    struct trace t = {"", NULL, 0};
    const char *failed = NULL;
    char err[64] = "";
    int rc;
    run_with(&t, &rc, &failed, err, sizeof err);
    CHECK(rc == 0 && failed == NULL);
    CHECK_STR(t.log, "+a +b +c +d | -d -d -c -b -a");
    /* c not wanted: neither started nor stopped */
    struct trace u = {"", NULL, 1};
    run_with(&u, &rc, &failed, err, sizeof err);
    CHECK_STR(u.log, "+a +b +d | -d -d -b -a");
}

static void failure(void)
{
    struct trace t = {"", "c", 0};
    const char *failed = NULL;
    char err[64] = "";
    int rc;
    run_with(&t, &rc, &failed, err, sizeof err);
    CHECK(rc == -1);
    CHECK_STR(failed, "c");
    CHECK_STR(err, "cannot start c");
    CHECK_STR(t.log, "+a +b -b -a"); /* what started stops, in reverse; nothing after c starts */
    struct trace u = {"", "a", 0};
    run_with(&u, &rc, &failed, err, sizeof err);
    CHECK(rc == -1 && strcmp(failed, "a") == 0 && u.log[0] == '\0');
}

UNIT_SUITE(components_tests) = {
    {"components: started in order, stopped in reverse, unwanted ones left out", order},
    {"components: a failed start stops those started, in reverse", failure},
    UNIT_END,
};

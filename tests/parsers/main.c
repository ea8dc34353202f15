/* Parser tests: every fixture through its parser (table in
 * test_fixtures*.c), a meta-test that every fixture file is in the table,
 * truncated prefixes of every fixture and random bytes through every
 * parser, and helper unit tests.
 *
 * Usage: parser-tests [FIXTURE_DIR]   (default tests/fixtures/nvidia) */
#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/parsers/harness.h"

void th_begin(th_t *t)
{
    t->nfail = 0;
    t->first[0] = '\0';
}

void th_fail(th_t *t, int line, const char *fmt, ...)
{
    if (t->nfail++ == 0) {
        int n = snprintf(t->first, sizeof t->first, "line %d: ", line);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->first + n, sizeof t->first - (size_t)n, fmt, ap);
        va_end(ap);
    }
}

void th_end(th_t *t, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    if (t->nfail == 0) {
        t->passed++;
        printf("ok - %s\n", name);
    } else {
        t->failed++;
        printf("not ok - %s: %s%s\n", name, t->first, t->nfail > 1 ? " (and more)" : "");
    }
}

static char *read_file(const char *dir, const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0)
        goto cleanup;
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0)
        goto cleanup;
    /* exactly n bytes, no terminator: parsers must respect len */
    buf = malloc(n ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    *len = (size_t)n;
cleanup:
    fclose(f);
    return buf;
}

static void run_fixture(th_t *t, const char *dir, const fixture_case_t *fc)
{
    th_begin(t);
    size_t len = 0;
    char *buf = read_file(dir, fc->file, &len);
    if (!buf)
        th_fail(t, __LINE__, "cannot read %s/%s", dir, fc->file);
    else
        fc->check(t, buf, len);
    free(buf);
    th_end(t, "fixture %s [%s]", fc->file, pk_name(fc->kind));
}

/* Every table of fixture checks; a file may appear in more than one. */
static const struct {
    const fixture_case_t *cases;
    const size_t *n;
} tables[] = {{smi_fixture_cases, &smi_fixture_cases_n},
              {link_fixture_cases, &link_fixture_cases_n},
              {fixture_cases, &fixture_cases_n},
              {monitor_fixture_cases, &monitor_fixture_cases_n}};
#define NTABLES (sizeof tables / sizeof tables[0])

static const fixture_case_t *find_case(const char *file)
{
    for (size_t k = 0; k < NTABLES; k++)
        for (size_t i = 0; i < *tables[k].n; i++)
            if (strcmp(tables[k].cases[i].file, file) == 0)
                return &tables[k].cases[i];
    return NULL;
}

/* Distinct file names over all tables. */
static size_t distinct_files(void)
{
    size_t n = 0;
    for (size_t k = 0; k < NTABLES; k++)
        for (size_t i = 0; i < *tables[k].n; i++)
            n += find_case(tables[k].cases[i].file) == &tables[k].cases[i];
    return n;
}

static void run_fixtures(th_t *t, const char *dir)
{
    for (size_t k = 0; k < NTABLES; k++)
        for (size_t i = 0; i < *tables[k].n; i++)
            run_fixture(t, dir, &tables[k].cases[i]);
}

/* Meta-test: a fixture file without a table entry is a failure. */
static void run_meta(th_t *t, const char *dir)
{
    th_begin(t);
    DIR *d = opendir(dir);
    size_t files = 0;
    if (!d) {
        th_fail(t, __LINE__, "cannot open fixture dir %s", dir);
    } else {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.' || strcmp(e->d_name, "SOURCES.md") == 0)
                continue;
            files++;
            if (!find_case(e->d_name))
                th_fail(t, __LINE__, "fixture %s has no entry in the test table", e->d_name);
        }
        closedir(d);
    }
    size_t listed = distinct_files();
    if (files < listed)
        th_fail(t, __LINE__, "tables list %zu fixtures but the dir has only %zu", listed, files);
    th_end(t, "meta: every fixture file in %s is covered (%zu files)", dir, files);
}

/* Parser k over prefixes of one fixture; returns the runs. */
static size_t truncate_one(th_t *t, const char *dir, const char *file, pkind_t k)
{
    size_t len = 0, runs = 0;
    char *buf = read_file(dir, file, &len);
    if (!buf)
        return 0;
    size_t step = len / 100 + 1;
    for (size_t n = 0;; n = n + step > len ? len : n + step) {
        char *copy = malloc(n ? n : 1); /* exact size: ASan catches over-reads */
        if (!copy)
            break;
        memcpy(copy, buf, n);
        char why[256];
        if (pk_run(k, copy, n, why, sizeof why) < 0)
            th_fail(t, __LINE__, "%s prefix %zu: %s", file, n, why);
        free(copy);
        runs++;
        if (n == len)
            break;
    }
    free(buf);
    return runs;
}

/* Every parser over prefixes of every fixture (each file once). */
static void run_truncation(th_t *t, const char *dir)
{
    for (int k = 0; k < PK_COUNT; k++) {
        th_begin(t);
        size_t runs = 0;
        for (size_t m = 0; m < NTABLES; m++)
            for (size_t i = 0; i < *tables[m].n; i++)
                if (find_case(tables[m].cases[i].file) == &tables[m].cases[i])
                    runs += truncate_one(t, dir, tables[m].cases[i].file, (pkind_t)k);
        th_end(t, "truncated prefixes through %s (%zu runs)", pk_name((pkind_t)k), runs);
    }
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void run_garbage(th_t *t)
{
    static const char alphabet[] = "|+-=  \t\n\nGPU0123NVX:,[]N/AMiB%W.ERR!<>/gpu\"Link";
    for (int k = 0; k < PK_COUNT; k++) {
        th_begin(t);
        uint64_t seed = 0x9e3779b97f4a7c15ULL + (uint64_t)k;
        for (int i = 0; i < 400; i++) {
            size_t n = rng_next(&seed) % 1500;
            char *b = malloc(n ? n : 1);
            if (!b)
                break;
            bool ascii = i % 2 == 0;
            for (size_t j = 0; j < n; j++) {
                uint64_t r = rng_next(&seed);
                b[j] = ascii ? alphabet[r % (sizeof alphabet - 1)] : (char)(r & 0xff);
            }
            char why[256];
            if (pk_run((pkind_t)k, b, n, why, sizeof why) < 0)
                th_fail(t, __LINE__, "random input %d (%zu bytes): %s", i, n, why);
            free(b);
        }
        th_end(t, "random bytes through %s (400 inputs)", pk_name((pkind_t)k));
    }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "tests/fixtures/nvidia";
    th_t t = {0};
    run_meta(&t, dir);
    run_fixtures(&t, dir);
    run_unit_tests(&t);
    run_truncation(&t, dir);
    run_garbage(&t);
    printf("%u passed, %u failed\n", t.passed, t.failed);
    return t.failed ? 1 : 0;
}

/* tokens.c — see tokens.h. */
#include "service/tokens.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "db/tokens.h"

#define PRUNE_EVERY_US (600LL * 1000000) /* expired rows are deleted this often */

/* The list in memory: jtis sorted, subjects sorted (each with its issued_before). */
struct sub_entry {
    char *sub;
    int64_t issued_before;
};

static struct {
    pthread_rwlock_t lock;
    char **jtis;
    size_t njtis;
    struct sub_entry *subs;
    size_t nsubs;
    int64_t version;
    atomic_int loaded;       /* the list has been loaded once */
    atomic_int started;      /* svc_tokens_start ran: checks need the list */
    pthread_mutex_t load_mu; /* one load at a time */
    int64_t last_try_us;     /* an inline load's rate limit (load_mu) */
    /* the thread */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, refresh_s;
    pthread_t thread;
} tl = {.lock = PTHREAD_RWLOCK_INITIALIZER,
        .load_mu = PTHREAD_MUTEX_INITIALIZER,
        .mu = PTHREAD_MUTEX_INITIALIZER,
        .cv = PTHREAD_COND_INITIALIZER};

struct record_arg {
    const char *jti, *sub, *role, *project;
    int64_t iat, exp;
};

static enum db_status record_fn(struct db_conn *c, void *arg)
{
    struct record_arg *a = arg;
    return db_token_record(c, a->jti, a->sub, a->role, a->project, a->iat, a->exp);
}

enum db_status svc_token_record(const char *jti, const char *sub, const char *role,
                                const char *project, int64_t iat, int64_t exp)
{
    struct record_arg a = {jti, sub, role, project, iat, exp};
    return db_run_tx(record_fn, &a);
}

/* ---- the list ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_sub(const void *a, const void *b)
{
    return strcmp(((const struct sub_entry *)a)->sub, ((const struct sub_entry *)b)->sub);
}

static enum db_status version_fn(struct db_conn *c, void *arg)
{
    return db_token_revocation_version(c, arg);
}

static enum db_status load_fn(struct db_conn *c, void *arg)
{
    return db_token_revocations_load(c, arg);
}

/* Builds the sorted arrays from l (taking its strings) and swaps them in. */
static int install(struct db_token_revocations *l)
{
    char **jtis = l->n ? calloc(l->n, sizeof *jtis) : NULL;
    struct sub_entry *subs = l->n ? calloc(l->n, sizeof *subs) : NULL;
    if (l->n > 0 && (jtis == NULL || subs == NULL)) {
        free(jtis);
        free(subs);
        return -1;
    }
    size_t nj = 0, ns = 0;
    for (size_t i = 0; i < l->n; i++) {
        struct db_token_revocation *e = &l->items[i];
        if (e->jti != NULL) {
            jtis[nj++] = e->jti;
            e->jti = NULL;
        } else {
            subs[ns].sub = e->sub;
            subs[ns++].issued_before = e->issued_before;
            e->sub = NULL;
        }
    }
    if (nj > 1)
        qsort(jtis, nj, sizeof *jtis, cmp_str);
    if (ns > 1)
        qsort(subs, ns, sizeof *subs, cmp_sub);
    pthread_rwlock_wrlock(&tl.lock);
    char **oj = tl.jtis;
    struct sub_entry *os = tl.subs;
    size_t onj = tl.njtis, ons = tl.nsubs;
    tl.jtis = jtis;
    tl.njtis = nj;
    tl.subs = subs;
    tl.nsubs = ns;
    tl.version = l->version;
    atomic_store(&tl.loaded, 1);
    pthread_rwlock_unlock(&tl.lock);
    for (size_t i = 0; i < onj; i++)
        free(oj[i]);
    for (size_t i = 0; i < ons; i++)
        free(os[i].sub);
    free(oj);
    free(os);
    return 0;
}

int svc_tokens_reload(int force)
{
    pthread_mutex_lock(&tl.load_mu);
    int64_t v = 0;
    int rc = 0;
    if (!force && atomic_load(&tl.loaded)) {
        if (db_run(version_fn, &v) < 0) {
            rc = -1;
            goto out;
        }
        pthread_rwlock_rdlock(&tl.lock);
        int same = v == tl.version;
        pthread_rwlock_unlock(&tl.lock);
        if (same)
            goto out;
    }
    struct db_token_revocations l;
    if (db_run_tx(load_fn, &l) < 0) {
        rc = -1;
        goto out;
    }
    rc = install(&l);
    if (rc == 0)
        log_json_steal(LOG_DEBUG,
                       json_pack("{s:s, s:I, s:I}", "msg", "token revocations loaded", "entries",
                                 (json_int_t)l.n, "version", (json_int_t)l.version));
    db_token_revocations_free(&l);
out:
    pthread_mutex_unlock(&tl.load_mu);
    return rc;
}

/* Not loaded yet (PostgreSQL was down at start): a request tries, at most once a second. */
static void load_inline(void)
{
    if (pthread_mutex_trylock(&tl.load_mu) != 0)
        return;
    int64_t now = util_mono_us();
    int due = now - tl.last_try_us >= 1000000;
    if (due)
        tl.last_try_us = now;
    pthread_mutex_unlock(&tl.load_mu);
    if (due)
        svc_tokens_reload(1);
}

int svc_token_revoked(const char *jti, const char *sub, int64_t iat)
{
    if (!atomic_load(&tl.started))
        return 0;
    if (!atomic_load(&tl.loaded)) {
        load_inline();
        if (!atomic_load(&tl.loaded))
            return -1;
    }
    int revoked = 0;
    pthread_rwlock_rdlock(&tl.lock);
    if (jti != NULL && jti[0] != '\0' && tl.njtis > 0)
        revoked = bsearch(&jti, tl.jtis, tl.njtis, sizeof *tl.jtis, cmp_str) != NULL;
    if (!revoked && sub != NULL && tl.nsubs > 0) {
        struct sub_entry key = {(char *)sub, 0};
        const struct sub_entry *e = bsearch(&key, tl.subs, tl.nsubs, sizeof *tl.subs, cmp_sub);
        revoked = e != NULL && iat <= e->issued_before;
    }
    pthread_rwlock_unlock(&tl.lock);
    return revoked;
}

/* ---- the thread ---- */

static enum db_status prune_fn(struct db_conn *c, void *arg)
{
    return db_tokens_prune(c, arg);
}

static void prune(void)
{
    long deleted = 0;
    if (db_run(prune_fn, &deleted) < 0)
        log_msg(LOG_WARN, "tokens: pruning expired tokens and revocations failed; retried later");
    else if (deleted > 0)
        log_json_steal(LOG_INFO,
                       json_pack("{s:s, s:I}", "msg", "expired tokens and revocations pruned",
                                 "rows", (json_int_t)deleted));
}

static void *tokens_main(void *arg)
{
    (void)arg;
    int64_t next_prune = 0;
    pthread_mutex_lock(&tl.mu);
    while (!tl.stop) {
        pthread_mutex_unlock(&tl.mu);
        if (svc_tokens_reload(0) != 0)
            log_msg(LOG_WARN,
                    "tokens: the revocation list cannot be read; the one held stays "
                    "in use, retried in %d s",
                    tl.refresh_s);
        int64_t now = util_mono_us();
        if (now >= next_prune) {
            prune();
            next_prune = now + PRUNE_EVERY_US;
        }
        pthread_mutex_lock(&tl.mu);
        if (tl.stop)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += tl.refresh_s;
        pthread_cond_timedwait(&tl.cv, &tl.mu, &ts);
    }
    pthread_mutex_unlock(&tl.mu);
    return NULL;
}

int svc_tokens_start(int refresh_s)
{
    tl.refresh_s = refresh_s > 0 ? refresh_s : 5;
    tl.stop = 0;
    atomic_store(&tl.started, 1);
    if (svc_tokens_reload(1) != 0)
        log_msg(LOG_WARN, "tokens: the revocation list cannot be read yet; authenticated "
                          "requests answer 503 until it can");
    if (pthread_create(&tl.thread, NULL, tokens_main, NULL) != 0) {
        atomic_store(&tl.started, 0);
        return -1;
    }
    return 0;
}

void svc_tokens_stop(void)
{
    if (!atomic_load(&tl.started))
        return;
    pthread_mutex_lock(&tl.mu);
    tl.stop = 1;
    pthread_cond_broadcast(&tl.cv);
    pthread_mutex_unlock(&tl.mu);
    pthread_join(tl.thread, NULL);
    atomic_store(&tl.started, 0);
}

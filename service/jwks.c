/* jwks.c — see jwks.h. */
#include "service/jwks.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/netpolicy.h"
#include "common/util.h"

/* ---- URL policy ---- */

int jwks_check_url(const char *url, char *err, size_t errlen)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL;
    int rc = -1;
    if (u == NULL || strlen(url) > 2048 || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        snprintf(err, errlen, "GPUFLEET_JWT_JWKS_URL is not a URL (got \"%.80s\")", url);
        goto cleanup;
    }
    char *user = NULL;
    if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
        curl_free(user);
        snprintf(err, errlen, "GPUFLEET_JWT_JWKS_URL must not carry credentials");
        goto cleanup;
    }
    if (strcmp(scheme, "https") == 0) {
        rc = 0;
    } else if (strcmp(scheme, "http") == 0) {
        char h[256];
        size_t hl = strlen(host);
        if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']' && hl - 2 < sizeof h) {
            memcpy(h, host + 1, hl - 2);
            h[hl - 2] = '\0';
        } else {
            snprintf(h, sizeof h, "%s", host);
        }
        if (strcmp(h, "localhost") == 0 || net_cidr_match(h, "127.0.0.0/8,::1/128") == 1)
            rc = 0;
        else
            snprintf(err, errlen,
                     "GPUFLEET_JWT_JWKS_URL must use https:// (http:// only to a loopback "
                     "address such as 127.0.0.1)");
    } else {
        snprintf(err, errlen, "GPUFLEET_JWT_JWKS_URL must use https:// (got \"%.80s\")", url);
    }
cleanup:
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

/* ---- fetching ---- */

struct fetch_buf {
    char *data;
    size_t len, cap;
    int too_big;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
    struct fetch_buf *b = ud;
    size_t n = size * nmemb;
    if (b->len + n > JWKS_MAX_BYTES) {
        b->too_big = 1;
        return 0; /* aborts the transfer */
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 16384;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (d == NULL)
            return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

static int fetch_url(const struct jwks_config *c, struct fetch_buf *b, char *err, size_t errlen)
{
    CURL *h = curl_easy_init();
    if (h == NULL) {
        snprintf(err, errlen, "cannot start a transfer");
        return -1;
    }
    int is_http = strncmp(c->url, "http://", 7) == 0;
    struct curl_slist *hdr = curl_slist_append(NULL, "Accept: application/jwk-set+json, "
                                                     "application/json");
    curl_easy_setopt(h, CURLOPT_URL, c->url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, is_http ? "http" : "https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 3L);
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)c->timeout_s);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)(c->timeout_s < 5 ? c->timeout_s : 5));
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    if (c->ca_file != NULL)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)JWKS_MAX_BYTES);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "gpufleetd/" GPUFLEET_VERSION);
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
    if (b->too_big || cc == CURLE_FILESIZE_EXCEEDED) {
        snprintf(err, errlen, "the JWK set is larger than %d bytes; refused", JWKS_MAX_BYTES);
        return -1;
    }
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "fetching the JWK set failed: %s", curl_easy_strerror(cc));
        return -1;
    }
    if (status != 200) {
        snprintf(err, errlen, "fetching the JWK set failed: HTTP %ld", status);
        return -1;
    }
    return 0;
}

static int read_file(const char *path, struct fetch_buf *b, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "cannot read the JWK set file (%s)",
                 fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (st.st_size > JWKS_MAX_BYTES) {
        close(fd);
        snprintf(err, errlen, "the JWK set file is larger than %d bytes; refused", JWKS_MAX_BYTES);
        return -1;
    }
    char chunk[8192];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (on_body(chunk, 1, (size_t)n, b) != (size_t)n)
            break;
    }
    close(fd);
    if (b->too_big) {
        snprintf(err, errlen, "the JWK set file is larger than %d bytes; refused", JWKS_MAX_BYTES);
        return -1;
    }
    return 0;
}

/* Every refresh logs the keys jwk_set_parse passes over (the reasons as jwk_key_from_json
 * words them): encryption keys (which providers publish next to signing keys) at debug,
 * keys this build cannot use (EdDSA, other algorithms) at info, malformed keys as
 * warnings. */
static void log_key_note(void *ud, const char *kid, const char *why, int malformed)
{
    (void)ud;
    int enc = strstr(why, "use is not") != NULL || strstr(why, "key_ops") != NULL;
    log_json_steal(
        malformed ? LOG_WARN
        : enc     ? LOG_DEBUG
                  : LOG_INFO,
        json_pack("{s:s, s:s, s:s}", "msg",
                  malformed ? "JWKS: malformed key ignored" : "JWKS: key ignored (not usable here)",
                  "kid", kid[0] ? kid : "(none)", "reason", why));
}

/* Fetches and parses, with no lock held. Returns a new set, or NULL with err. */
static struct jwk_set *fetch_set(const struct jwks_config *c, char *err, size_t errlen)
{
    struct fetch_buf b = {0};
    struct jwk_set *s = NULL;
    int rc = c->url ? fetch_url(c, &b, err, errlen) : read_file(c->file, &b, err, errlen);
    if (rc == 0)
        rc = jwk_set_parse(b.data ? b.data : "", b.len, log_key_note, NULL, &s, err, errlen);
    free(b.data);
    return rc == 0 ? s : NULL;
}

/* ---- the holder of the current set ---- */

struct jwks {
    struct jwks_config cfg; /* strings owned */
    pthread_mutex_t mu;
    pthread_cond_t wake; /* the refresher: a request, a stop */
    struct jwk_set *set;
    uint64_t gen; /* current set's generation (atomic reads) */
    uint64_t next_gen;
    uint64_t attempts;
    int requested, in_flight, stop, started, failures;
    int64_t last_attempt_us, next_due_us; /* monotonic */
    int64_t last_success_us;              /* wall clock, 0 = never */
    char last_error[192];
    pthread_t thread;
};

static struct jwks *g_jwks;

void jwks_set_global(struct jwks *j)
{
    g_jwks = j;
}

struct jwks *jwks_global(void)
{
    return g_jwks;
}

static char *dup_opt(const char *s)
{
    return s ? strdup(s) : NULL;
}

struct jwks *jwks_new(const struct jwks_config *c)
{
    struct jwks *j = calloc(1, sizeof *j);
    if (j == NULL)
        return NULL;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    j->cfg = *c;
    j->cfg.url = dup_opt(c->url);
    j->cfg.file = dup_opt(c->file);
    j->cfg.ca_file = dup_opt(c->ca_file);
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->wake, &ca);
    pthread_condattr_destroy(&ca);
    j->next_gen = 1;
    return j;
}

static int64_t backoff_us(const struct jwks *j)
{
    int64_t d = (int64_t)j->cfg.min_refresh_s * 1000000;
    for (int i = 1; i < j->failures && i < 20 && d < (int64_t)j->cfg.refresh_s * 1000000; i++)
        d *= 2;
    if (d > (int64_t)j->cfg.refresh_s * 1000000)
        d = (int64_t)j->cfg.refresh_s * 1000000;
    return d;
}

/* Records a fetch's outcome (lock held). Returns the set to release after unlocking. */
static struct jwk_set *install_locked(struct jwks *j, struct jwk_set *s, const char *err,
                                      int64_t started_us)
{
    struct jwk_set *old = NULL;
    j->attempts++;
    if (s == NULL) {
        j->failures++;
        snprintf(j->last_error, sizeof j->last_error, "%s", err);
        j->next_due_us = started_us + backoff_us(j);
        log_json_steal(LOG_WARN,
                       json_pack("{s:s, s:s, s:i, s:i, s:s}", "msg",
                                 j->set ? "JWKS refresh failed; the cached keys stay in use"
                                        : "JWKS fetch failed; no keys are loaded",
                                 "reason", err, "consecutive_failures", j->failures, "keys",
                                 j->set ? (int)j->set->n : 0, "source",
                                 j->cfg.url ? "url" : "file"));
    } else {
        if (j->failures > 0)
            log_json_steal(LOG_INFO, json_pack("{s:s, s:i}", "msg",
                                               "JWKS refresh succeeded again; no longer degraded",
                                               "failures_before", j->failures));
        j->failures = 0;
        j->last_error[0] = '\0';
        j->last_success_us = util_now_us();
        j->next_due_us = started_us + (int64_t)j->cfg.refresh_s * 1000000;
        if (j->set != NULL && memcmp(j->set->digest, s->digest, sizeof s->digest) == 0) {
            old = s; /* unchanged */
        } else {
            s->gen = j->next_gen++;
            old = j->set;
            j->set = s;
            __atomic_store_n(&j->gen, s->gen, __ATOMIC_RELEASE);
            json_t *kids = json_array();
            for (size_t i = 0; i < s->n; i++)
                json_array_append_new(kids, json_pack("{s:s, s:s}", "kid", s->keys[i].kid, "alg",
                                                      jwt_alg_str(s->keys[i].alg)));
            log_json_steal(LOG_INFO, json_pack("{s:s, s:o, s:I}", "msg", "JWKS keys loaded", "keys",
                                               kids, "generation", (json_int_t)s->gen));
        }
    }
    return old;
}

int jwks_load(struct jwks *j, char *err, size_t errlen)
{
    char why[192] = "";
    int64_t t0 = util_mono_us();
    pthread_mutex_lock(&j->mu);
    j->last_attempt_us = t0;
    pthread_mutex_unlock(&j->mu);
    struct jwk_set *s = fetch_set(&j->cfg, why, sizeof why);
    pthread_mutex_lock(&j->mu);
    struct jwk_set *old = install_locked(j, s, why, t0);
    pthread_mutex_unlock(&j->mu);
    jwk_set_release(old);
    if (s == NULL) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    return 0;
}

static void deadline_ts(int64_t mono_us, struct timespec *ts)
{
    ts->tv_sec = (time_t)(mono_us / 1000000);
    ts->tv_nsec = (long)(mono_us % 1000000) * 1000;
}

static void *refresher(void *arg)
{
    struct jwks *j = arg;
    pthread_mutex_lock(&j->mu);
    while (!j->stop) {
        int64_t now = util_mono_us();
        int64_t due = j->next_due_us;
        if (j->requested && j->failures == 0) {
            /* An unknown kid (or no keys): sooner than scheduled, but at most one fetch per
             * min_refresh_s. After a failure the back-off (next_due_us) stands: a storm of
             * forged kids cannot make the refresher hammer a struggling provider. */
            int64_t allowed = j->last_attempt_us + (int64_t)j->cfg.min_refresh_s * 1000000;
            if (allowed < due)
                due = allowed;
        }
        if (now < due) {
            struct timespec ts;
            deadline_ts(due, &ts);
            pthread_cond_timedwait(&j->wake, &j->mu, &ts);
            continue;
        }
        j->in_flight = 1;
        j->requested = 0;
        j->last_attempt_us = now;
        pthread_mutex_unlock(&j->mu);
        char why[192] = "";
        struct jwk_set *s = fetch_set(&j->cfg, why, sizeof why);
        pthread_mutex_lock(&j->mu);
        j->in_flight = 0;
        struct jwk_set *old = install_locked(j, s, why, now);
        pthread_mutex_unlock(&j->mu);
        jwk_set_release(old);
        pthread_mutex_lock(&j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

int jwks_start(struct jwks *j)
{
    pthread_mutex_lock(&j->mu);
    if (j->next_due_us == 0)
        j->next_due_us = util_mono_us();
    pthread_mutex_unlock(&j->mu);
    if (pthread_create(&j->thread, NULL, refresher, j) != 0)
        return -1;
    j->started = 1;
    return 0;
}

void jwks_free(struct jwks *j)
{
    if (j == NULL)
        return;
    if (g_jwks == j)
        g_jwks = NULL;
    if (j->started) {
        pthread_mutex_lock(&j->mu);
        j->stop = 1;
        pthread_cond_broadcast(&j->wake);
        pthread_mutex_unlock(&j->mu);
        pthread_join(j->thread, NULL);
    }
    jwk_set_release(j->set);
    pthread_cond_destroy(&j->wake);
    pthread_mutex_destroy(&j->mu);
    free((char *)j->cfg.url);
    free((char *)j->cfg.file);
    free((char *)j->cfg.ca_file);
    free(j);
    curl_global_cleanup();
}

/* Looks kid up in the current set (lock held). */
static enum jwks_lookup_result find_locked(struct jwks *j, const char *kid, struct jwk_set **set,
                                           const struct jwk_key **key)
{
    if (j->set == NULL)
        return JWKS_NO_KEYS;
    const struct jwk_key *k = jwk_set_find(j->set, kid);
    if (k == NULL)
        return JWKS_UNKNOWN_KID;
    *set = jwk_set_ref(j->set);
    *key = k;
    return JWKS_FOUND;
}

enum jwks_lookup_result jwks_lookup(struct jwks *j, const char *kid, struct jwk_set **set,
                                    const struct jwk_key **key)
{
    *set = NULL;
    *key = NULL;
    pthread_mutex_lock(&j->mu);
    enum jwks_lookup_result res = find_locked(j, kid, set, key);
    /* Never wait: the refresher fetches when its schedule allows (single flight, at most
     * one fetch per min_refresh_s, the failure back-off honoured); this caller answers
     * now and its client retries. */
    if (res != JWKS_FOUND && j->started && !j->stop && !j->in_flight && !j->requested) {
        j->requested = 1;
        pthread_cond_signal(&j->wake);
    }
    pthread_mutex_unlock(&j->mu);
    return res;
}

uint64_t jwks_generation(struct jwks *j)
{
    return __atomic_load_n(&j->gen, __ATOMIC_ACQUIRE);
}

json_t *jwks_health(struct jwks *j, int *unavailable)
{
    pthread_mutex_lock(&j->mu);
    const char *status = j->set == NULL ? "unavailable" : j->failures > 0 ? "degraded" : "ok";
    *unavailable = j->set == NULL;
    char ts[40] = "";
    if (j->last_success_us > 0)
        util_rfc3339(j->last_success_us, ts, sizeof ts);
    json_t *o =
        json_pack("{s:s, s:s, s:i, s:i}", "status", status, "source", j->cfg.url ? "url" : "file",
                  "keys", j->set ? (int)j->set->n : 0, "consecutive_failures", j->failures);
    json_object_set_new(o, "last_success", ts[0] ? json_string(ts) : json_null());
    if (j->failures > 0)
        json_object_set_new(o, "last_error", json_string(j->last_error));
    pthread_mutex_unlock(&j->mu);
    return o;
}

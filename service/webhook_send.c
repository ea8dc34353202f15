/* webhook_send.c — the HTTP side of the webhook dispatcher (see webhooks.h for the
 * guarantees, webhooks_internal.h for the interface): one libcurl multi handle, one easy
 * handle per attempt with the Standard Webhooks headers, the address policy applied to
 * every connection right before connect(), and the answer captured (at most RESP_MAX
 * bytes read, RESP_KEEP kept) and turned into a result; and the attempts' figures for
 * /metrics. Everything that touches libcurl is here. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/sbuf.h"
#include "common/utf8.h"
#include "common/util.h"
#include "common/webhook.h"
#include "service/webhooks_internal.h"

#define RESP_KEEP  512         /* bytes of an answer kept for last_error */
#define RESP_MAX   (64 * 1024) /* bytes of an answer read at most */
#define USER_AGENT "gpufleet-webhooks/" GPUFLEET_VERSION

struct whs_transfer {
    CURL *easy;
    struct curl_slist *hdrs;
    void *owner;
    char resp[RESP_KEEP + 1];
    size_t resp_len, resp_total;
    int resp_capped;
    char errbuf[CURL_ERROR_SIZE];
    char refused[160]; /* why the address policy refused a connection */
    int64_t start_us;
};

static struct {
    CURLM *multi;
    char *allow;
    long timeout_ms;
} tx;

/* The attempts' figures (process-local; read by /metrics from any thread). */
static const char *const results[] = {"delivered", "failed_attempt", "given_up"};
static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                 1,     2.5,  5,     10,   30,  60,   120};
#define NBUCKETS (sizeof buckets / sizeof buckets[0])
static atomic_uint_fast64_t attempts[3];
static atomic_uint_fast64_t hist[NBUCKETS + 1]; /* last: above the last bucket */
static atomic_uint_fast64_t hist_sum_us;

int whs_init(const char *allow_cidrs, int timeout_ms)
{
    tx.allow = strdup(allow_cidrs ? allow_cidrs : "");
    tx.timeout_ms = timeout_ms;
    if (tx.allow == NULL || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        goto fail;
    tx.multi = curl_multi_init();
    if (tx.multi == NULL) {
        curl_global_cleanup();
        goto fail;
    }
    return 0;
fail:
    free(tx.allow);
    memset(&tx, 0, sizeof tx);
    return -1;
}

void whs_cleanup(void)
{
    curl_multi_cleanup(tx.multi);
    curl_global_cleanup();
    free(tx.allow);
    memset(&tx, 0, sizeof tx);
}

void whs_wakeup(void)
{
    curl_multi_wakeup(tx.multi);
}

void whs_end(struct whs_transfer *t)
{
    if (t == NULL)
        return;
    if (t->easy != NULL) {
        curl_multi_remove_handle(tx.multi, t->easy);
        curl_easy_cleanup(t->easy);
    }
    curl_slist_free_all(t->hdrs);
    OPENSSL_cleanse(t, sizeof *t);
    free(t);
}

static size_t on_body(char *data, size_t size, size_t n, void *cls)
{
    struct whs_transfer *t = cls;
    size_t len = size * n;
    if (t->resp_len < RESP_KEEP) {
        size_t take = RESP_KEEP - t->resp_len < len ? RESP_KEEP - t->resp_len : len;
        memcpy(t->resp + t->resp_len, data, take);
        t->resp_len += take;
    }
    t->resp_total += len;
    if (t->resp_total > RESP_MAX) {
        t->resp_capped = 1;
        return 0; /* enough: the transfer ends with CURLE_WRITE_ERROR */
    }
    return len;
}

/* Every connection's address passes the policy right before it is opened; after one
 * refusal every further address of the attempt is refused too. */
static curl_socket_t on_open_socket(void *cls, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct whs_transfer *t = cls;
    char ip[INET6_ADDRSTRLEN] = "";
    if (purpose != CURLSOCKTYPE_IPCXN || t->refused[0] != '\0')
        return CURL_SOCKET_BAD;
    if (a->family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)&a->addr)->sin_addr, ip, sizeof ip);
    else if (a->family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&a->addr)->sin6_addr, ip, sizeof ip);
    enum wh_addr verdict = ip[0] ? wh_address_check(ip, tx.allow) : WH_ADDR_INVALID;
    if (verdict != WH_ADDR_OK) {
        snprintf(t->refused, sizeof t->refused, "%s is %s", ip[0] ? ip : "the address",
                 verdict == WH_ADDR_FORBIDDEN  ? "a link-local, metadata or reserved address"
                 : verdict == WH_ADDR_INTERNAL ? "a loopback or private address outside "
                                                 "GPUFLEET_WEBHOOK_ALLOW_CIDRS"
                                               : "not an IP address");
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

static int add_header(struct whs_transfer *t, const char *name, const char *value)
{
    char line[256];
    snprintf(line, sizeof line, "%s: %s", name, value);
    struct curl_slist *l = curl_slist_append(t->hdrs, line);
    if (l == NULL)
        return -1;
    t->hdrs = l;
    return 0;
}

/* The signed headers into t->hdrs. Returns 0, or -1. */
static int sign_headers(struct whs_transfer *t, const struct whs_request *rq)
{
    char msg_id[32], ts[24], sig[WH_SIGNATURE_LEN + 1];
    long long now_s = (long long)(util_now_us() / 1000000);
    snprintf(msg_id, sizeof msg_id, "evt_%lld", (long long)rq->event_id);
    snprintf(ts, sizeof ts, "%lld", now_s);
    if (wh_sign(rq->key, rq->keylen, msg_id, now_s, rq->body, rq->body_len, sig, sizeof sig) != 0)
        return -1;
    int rc = 0;
    if (add_header(t, "Content-Type", "application/json") != 0 ||
        add_header(t, "webhook-id", msg_id) != 0 || add_header(t, "webhook-timestamp", ts) != 0 ||
        add_header(t, "webhook-signature", sig) != 0 || add_header(t, "Expect", "") != 0)
        rc = -1;
    OPENSSL_cleanse(sig, sizeof sig);
    return rc;
}

struct whs_transfer *whs_start(const struct whs_request *rq, void *owner)
{
    struct whs_transfer *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->owner = owner;
    if (sign_headers(t, rq) != 0 || (t->easy = curl_easy_init()) == NULL) {
        whs_end(t);
        return NULL;
    }
    CURL *e = t->easy;
    curl_easy_setopt(e, CURLOPT_URL, rq->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROXY, ""); /* never a proxy from the environment */
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, tx.timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, tx.timeout_ms);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_USERAGENT, USER_AGENT);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->hdrs);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, rq->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
    t->start_us = util_mono_us();
    if (curl_multi_add_handle(tx.multi, e) != CURLM_OK) {
        whs_end(t);
        return NULL;
    }
    return t;
}

/* The last_error of a failed attempt into out (at most WHS_ERROR_MAX bytes, valid UTF-8). */
static void attempt_error(const struct whs_transfer *t, CURLcode rc, long code, char *out,
                          size_t outlen)
{
    char text[WHS_ERROR_MAX + 1];
    if (t->refused[0] != '\0') {
        snprintf(text, sizeof text, "connection refused by the address policy: %s", t->refused);
    } else if (rc != CURLE_OK && !(t->resp_capped && code > 0)) {
        snprintf(text, sizeof text, "%s%s%s", curl_easy_strerror(rc), t->errbuf[0] ? ": " : "",
                 t->errbuf);
    } else {
        char excerpt[RESP_KEEP + 1];
        utf8_clean(t->resp, t->resp_len, excerpt, sizeof excerpt);
        for (char *p = excerpt; *p; p++)
            if ((unsigned char)*p < 0x20)
                *p = ' ';
        snprintf(text, sizeof text, "HTTP %ld%s%s%s", code,
                 code >= 300 && code < 400 ? " (redirects are not followed)" : "",
                 excerpt[0] ? ": " : "", excerpt);
    }
    utf8_clean(text, strlen(text), out, outlen < WHS_ERROR_MAX + 1 ? outlen : WHS_ERROR_MAX + 1);
}

/* The class of a failed attempt as one word (never the receiver's answer). */
static const char *error_kind(const struct whs_transfer *t, CURLcode rc, long code)
{
    if (t->refused[0])
        return "address_refused";
    switch (rc) {
    case CURLE_OK:
        return code == 410                 ? "gone"
               : code >= 400 && code < 500 ? "http_4xx"
               : code >= 500 && code < 600 ? "http_5xx"
                                           : "http_status";
    case CURLE_OPERATION_TIMEDOUT: return "timeout";
    case CURLE_COULDNT_RESOLVE_HOST: return "dns";
    case CURLE_COULDNT_CONNECT: return "connect";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_USE_SSL_FAILED: return "tls";
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_WRITE_ERROR: return "transfer";
    default: return "other";
    }
}

/* How the transfer t ended with rc. */
static void attempt_result(const struct whs_transfer *t, CURLcode rc, struct whs_result *res)
{
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    res->latency_us = util_mono_us() - t->start_us;
    res->ok = (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t->resp_capped)) && code >= 200 &&
              code < 300 && t->refused[0] == '\0';
    res->gone = rc == CURLE_OK && code == 410;
    res->response_code = code >= 100 && code <= 999 ? (int)code : 0;
    res->error_class = NULL;
    res->error_kind = NULL;
    res->error[0] = '\0';
    if (res->ok)
        return;
    res->error_kind = error_kind(t, rc, code);
    res->error_class = t->refused[0]    ? "address refused by the policy"
                       : rc != CURLE_OK ? curl_easy_strerror(rc)
                                        : "HTTP status";
    attempt_error(t, rc, code, res->error, sizeof res->error);
}

static void count(const struct whs_result *res, int given_up)
{
    atomic_fetch_add(&attempts[res->ok ? 0 : given_up ? 2 : 1], 1);
    double secs = (double)res->latency_us / 1e6;
    size_t b = 0;
    while (b < NBUCKETS && secs > buckets[b])
        b++;
    atomic_fetch_add(&hist[b], 1);
    atomic_fetch_add(&hist_sum_us, (uint64_t)(res->latency_us > 0 ? res->latency_us : 0));
}

int whs_perform(int (*done)(void *owner, const struct whs_result *res))
{
    int running = 0, left, finished = 0;
    curl_multi_perform(tx.multi, &running);
    CURLMsg *m;
    while ((m = curl_multi_info_read(tx.multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct whs_transfer *t = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        struct whs_result res;
        attempt_result(t, m->data.result, &res);
        count(&res, done(t->owner, &res));
        finished = 1;
    }
    return finished;
}

int whs_wait(int fd, int timeout_ms)
{
    struct curl_waitfd extra = {fd, CURL_WAIT_POLLIN, 0};
    curl_multi_poll(tx.multi, &extra, fd >= 0 ? 1 : 0, timeout_ms, NULL);
    return fd >= 0 && (extra.revents & CURL_WAIT_POLLIN);
}

void whs_metrics(struct sbuf *b)
{
    sbuf_printf(b, "# HELP gpufleet_webhook_deliveries_total Webhook delivery attempts by result: "
                   "delivered (a 2xx answer), failed_attempt (another attempt follows), given_up "
                   "(the event is given up and the webhook disabled: a 410 Gone, or the last "
                   "failure within GPUFLEET_WEBHOOK_RETRY_MAX_SECONDS).\n"
                   "# TYPE gpufleet_webhook_deliveries_total counter\n");
    for (size_t i = 0; i < 3; i++)
        sbuf_printf(b, "gpufleet_webhook_deliveries_total{result=\"%s\"} %llu\n", results[i],
                    (unsigned long long)atomic_load(&attempts[i]));
    sbuf_printf(b, "# HELP gpufleet_webhook_delivery_duration_seconds Time from the start of a "
                   "webhook delivery attempt to its end (an answer, an error or the timeout), "
                   "every attempt.\n"
                   "# TYPE gpufleet_webhook_delivery_duration_seconds histogram\n");
    uint64_t cum = 0;
    for (size_t k = 0; k <= NBUCKETS; k++) {
        cum += atomic_load(&hist[k]);
        if (k < NBUCKETS)
            sbuf_printf(b, "gpufleet_webhook_delivery_duration_seconds_bucket{le=\"%g\"} %llu\n",
                        buckets[k], (unsigned long long)cum);
    }
    sbuf_printf(b,
                "gpufleet_webhook_delivery_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
                "gpufleet_webhook_delivery_duration_seconds_sum %.6f\n"
                "gpufleet_webhook_delivery_duration_seconds_count %llu\n",
                (unsigned long long)cum, (double)atomic_load(&hist_sum_us) / 1e6,
                (unsigned long long)cum);
}

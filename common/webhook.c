/* webhook.c — see webhook.h. */
#include "common/webhook.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/netpolicy.h"
#include "common/sbuf.h"
#include "common/utf8.h"

#define SECRET_PREFIX "whsec_"

int wh_secret_text(const unsigned char *key, size_t keylen, char *out, size_t outlen)
{
    size_t need = strlen(SECRET_PREFIX) + 4 * ((keylen + 2) / 3) + 1;
    if (keylen == 0 || keylen > 1024 || outlen < need)
        return -1;
    memcpy(out, SECRET_PREFIX, strlen(SECRET_PREFIX));
    EVP_EncodeBlock((unsigned char *)out + strlen(SECRET_PREFIX), key, (int)keylen);
    return 0;
}

int wh_secret_parse(const char *text, unsigned char *key, size_t keycap, size_t *keylen)
{
    *keylen = 0;
    if (strncmp(text, SECRET_PREFIX, strlen(SECRET_PREFIX)) == 0)
        text += strlen(SECRET_PREFIX);
    size_t n = strlen(text);
    if (n == 0 || n % 4 != 0 || n / 4 * 3 > keycap + 2)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)text[i]) || text[i] == '+' || text[i] == '/' ||
              (text[i] == '=' && i >= n - 2)))
            return -1;
    unsigned char *buf = malloc(n / 4 * 3 + 1);
    if (buf == NULL)
        return -1;
    int len = EVP_DecodeBlock(buf, (const unsigned char *)text, (int)n);
    if (len < 0) {
        free(buf);
        return -1;
    }
    /* EVP_DecodeBlock counts the padding's bytes too. */
    if (text[n - 1] == '=')
        len--;
    if (text[n - 2] == '=')
        len--;
    int rc = -1;
    if (len > 0 && (size_t)len <= keycap) {
        memcpy(key, buf, (size_t)len);
        *keylen = (size_t)len;
        rc = 0;
    }
    OPENSSL_cleanse(buf, n / 4 * 3 + 1);
    free(buf);
    return rc;
}

int wh_sign(const unsigned char *key, size_t keylen, const char *msg_id, long long timestamp,
            const char *body, size_t bodylen, char *out, size_t outlen)
{
    if (outlen < WH_SIGNATURE_LEN + 1 || keylen == 0)
        return -1;
    char ts[24];
    int tslen = snprintf(ts, sizeof ts, "%lld", timestamp);
    unsigned char mac[EVP_MAX_MD_SIZE];
    size_t maclen = 0;
    int rc = -1;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *h = m ? EVP_MAC_CTX_new(m) : NULL;
    if (h != NULL && EVP_MAC_init(h, key, keylen, params) == 1 &&
        EVP_MAC_update(h, (const unsigned char *)msg_id, strlen(msg_id)) == 1 &&
        EVP_MAC_update(h, (const unsigned char *)".", 1) == 1 &&
        EVP_MAC_update(h, (const unsigned char *)ts, (size_t)tslen) == 1 &&
        EVP_MAC_update(h, (const unsigned char *)".", 1) == 1 &&
        EVP_MAC_update(h, (const unsigned char *)body, bodylen) == 1 &&
        EVP_MAC_final(h, mac, &maclen, sizeof mac) == 1 && maclen == 32) {
        memcpy(out, "v1,", 3);
        EVP_EncodeBlock((unsigned char *)out + 3, mac, (int)maclen);
        rc = 0;
    }
    EVP_MAC_CTX_free(h);
    EVP_MAC_free(m);
    OPENSSL_cleanse(mac, sizeof mac);
    return rc;
}

/* ---- addresses ---- */

/* Not public: loopback, private, shared (CGNAT), IETF protocol assignments, benchmarking
 * and documentation ranges. (What net_address_forbidden refuses is checked first.) */
static const char internal_v4[] = "127.0.0.0/8, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,"
                                  " 100.64.0.0/10, 192.0.0.0/24, 192.0.2.0/24, 198.18.0.0/15,"
                                  " 198.51.100.0/24, 203.0.113.0/24";
static const char internal_v6[] = "::1/128, fc00::/7, fec0::/10, 2001:db8::/32, 100::/64";

/* 1 when the IPv4 address in b[0..4) is internal. */
static int v4_internal(const unsigned char *b)
{
    char s[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, b, s, sizeof s) == NULL)
        return 1;
    return net_cidr_match(s, internal_v4) != 0;
}

enum wh_addr wh_address_check(const char *address, const char *allow_cidrs)
{
    static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char zero12[12] = {0};
    unsigned char b[16];
    int v6;
    if (address == NULL)
        return WH_ADDR_INVALID;
    if (inet_pton(AF_INET, address, b) == 1)
        v6 = 0;
    else if (inet_pton(AF_INET6, address, b) == 1)
        v6 = 1;
    else
        return WH_ADDR_INVALID;
    if (net_address_forbidden(address))
        return WH_ADDR_FORBIDDEN;
    if (allow_cidrs != NULL && allow_cidrs[0] != '\0' && net_cidr_match(address, allow_cidrs) == 1)
        return WH_ADDR_OK;
    if (!v6)
        return v4_internal(b) ? WH_ADDR_INTERNAL : WH_ADDR_OK;
    if (memcmp(b, mapped, 12) == 0 || memcmp(b, nat64, 12) == 0 || memcmp(b, zero12, 12) == 0)
        return v4_internal(b + 12) || memcmp(b, zero12, 12) == 0 ? WH_ADDR_INTERNAL : WH_ADDR_OK;
    /* 6to4 2002::/16 never gets here: net_address_forbidden refuses it whole */
    return net_cidr_match(address, internal_v6) != 0 ? WH_ADDR_INTERNAL : WH_ADDR_OK;
}

const char *wh_address_reason(enum wh_addr a)
{
    switch (a) {
    case WH_ADDR_OK: return "allowed";
    case WH_ADDR_FORBIDDEN:
        return "a link-local, cloud metadata, unspecified, multicast or reserved address, or "
               "one that tunnels to IPv4 (6to4, Teredo, local NAT64, IPv4-translated), which is "
               "never allowed";
    case WH_ADDR_INTERNAL:
        return "a loopback or private address that GPUFLEET_WEBHOOK_ALLOW_CIDRS does not list";
    case WH_ADDR_INVALID: break;
    }
    return "not an IP address";
}

/* ---- URLs ---- */

/* A DNS name: labels of 1-63 letters, digits and inner hyphens, at most 253 bytes, an
 * optional final dot, and a last label that is not all digits (that would be an IPv4
 * form libcurl did not take as one). */
static int valid_dns_name(const char *h)
{
    size_t n = strlen(h);
    if (n > 0 && h[n - 1] == '.')
        n--;
    if (n == 0 || n > 253)
        return 0;
    size_t label = 0, start = 0;
    int all_digits = 1;
    for (size_t i = 0; i <= n; i++) {
        char c = i < n ? h[i] : '.';
        if (c == '.') {
            if (label == 0 || label > 63 || h[start] == '-' || h[i - 1] == '-')
                return 0;
            if (i == n && all_digits)
                return 0;
            label = 0;
            start = i + 1;
            all_digits = 1;
            continue;
        }
        if (!(isalnum((unsigned char)c) || c == '-'))
            return 0;
        if (!isdigit((unsigned char)c))
            all_digits = 0;
        label++;
    }
    return 1;
}

/* A URL part, or NULL when absent (caller curl_free()s). */
static char *url_part(CURLU *u, CURLUPart what)
{
    char *v = NULL;
    if (curl_url_get(u, what, &v, 0) != CURLUE_OK)
        return NULL;
    return v;
}

enum wh_url wh_url_check(const char *url, const char *allow_cidrs, char **normalized, char *detail,
                         size_t detaillen)
{
    *normalized = NULL;
    detail[0] = '\0';
    enum wh_url rc = WH_URL_INVALID;
    size_t n = strlen(url);
    CURLU *u = NULL;
    char *scheme = NULL, *user = NULL, *pass = NULL, *frag = NULL, *host = NULL, *zone = NULL,
         *full = NULL;
    if (n == 0 || n > WH_URL_MAX) {
        snprintf(detail, detaillen, "url must be 1 to %d bytes", WH_URL_MAX);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f) {
            snprintf(detail, detaillen,
                     "url must be printable ASCII without spaces (percent-encode the rest; "
                     "write an internationalized host name in its xn-- form)");
            goto done;
        }
    if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0) {
        snprintf(detail, detaillen, "url must start with http:// or https://");
        goto done;
    }
    u = curl_url();
    if (u == NULL || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
        snprintf(detail, detaillen, "url is not a valid URL");
        goto done;
    }
    scheme = url_part(u, CURLUPART_SCHEME);
    if (scheme == NULL || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
        snprintf(detail, detaillen, "url must start with http:// or https://");
        goto done;
    }
    user = url_part(u, CURLUPART_USER);
    pass = url_part(u, CURLUPART_PASSWORD);
    if (user != NULL || pass != NULL) {
        snprintf(detail, detaillen,
                 "url must not contain a user name or password (the webhook's signature "
                 "authenticates deliveries)");
        goto done;
    }
    frag = url_part(u, CURLUPART_FRAGMENT);
    if (frag != NULL) {
        snprintf(detail, detaillen, "url must not contain a fragment (#...)");
        goto done;
    }
    host = url_part(u, CURLUPART_HOST);
    zone = url_part(u, CURLUPART_ZONEID);
    if (host == NULL || host[0] == '\0') {
        snprintf(detail, detaillen, "url has no host");
        goto done;
    }
    if (zone != NULL) {
        snprintf(detail, detaillen, "url must not name an IPv6 zone");
        goto done;
    }
    char literal[64] = "";
    unsigned char bin[16];
    size_t hl = strlen(host);
    if (host[0] == '[' && hl > 2 && hl - 2 < sizeof literal && host[hl - 1] == ']') {
        memcpy(literal, host + 1, hl - 2);
        literal[hl - 2] = '\0';
        if (inet_pton(AF_INET6, literal, bin) != 1) {
            snprintf(detail, detaillen, "url has an invalid IPv6 address");
            goto done;
        }
    } else if (inet_pton(AF_INET, host, bin) == 1) {
        snprintf(literal, sizeof literal, "%s", host);
    } else if (!valid_dns_name(host)) {
        snprintf(detail, detaillen,
                 "url's host must be an IP address or a DNS name of letters, digits, hyphens "
                 "and dots");
        goto done;
    }
    if (literal[0] != '\0') {
        enum wh_addr a = wh_address_check(literal, allow_cidrs);
        if (a != WH_ADDR_OK) {
            snprintf(detail, detaillen, "url's address %s is %s", literal, wh_address_reason(a));
            rc = WH_URL_ADDRESS;
            goto done;
        }
    }
    full = url_part(u, CURLUPART_URL);
    if (full == NULL || strlen(full) > WH_URL_MAX || (*normalized = strdup(full)) == NULL) {
        snprintf(detail, detaillen, "url cannot be normalized within %d bytes", WH_URL_MAX);
        goto done;
    }
    rc = WH_URL_OK;
done:
    curl_free(scheme);
    curl_free(user);
    curl_free(pass);
    curl_free(frag);
    curl_free(host);
    curl_free(zone);
    curl_free(full);
    curl_url_cleanup(u);
    return rc;
}

int64_t wh_backoff_ms(int attempts, int64_t base_ms, int64_t cap_ms)
{
    int64_t d = base_ms > 0 ? base_ms : 1;
    for (int i = 1; i < attempts && d < cap_ms; i++)
        d *= 2;
    return d < cap_ms ? d : cap_ms;
}

/* ---- payloads ---- */

#define SLACK_MAX 3000

/* Appends s with Slack's control characters escaped. */
static void slack_add(struct sbuf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': sbuf_adds(b, "&amp;"); break;
        case '<': sbuf_adds(b, "&lt;"); break;
        case '>': sbuf_adds(b, "&gt;"); break;
        case '\n':
        case '\r':
        case '\t': sbuf_add(b, " ", 1); break;
        default: sbuf_add(b, s, 1);
        }
    }
}

static char *slack_text(const json_t *ev, const char *type, const char *at)
{
    struct sbuf b;
    sbuf_init(&b, 512);
    sbuf_adds(&b, "[gpufleet] ");
    slack_add(&b, type);
    sbuf_printf(&b, " (event %lld at ", (long long)json_integer_value(json_object_get(ev, "id")));
    slack_add(&b, at);
    sbuf_adds(&b, ")");
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach((json_t *)ev, k, v)
    {
        if (!strcmp(k, "id") || !strcmp(k, "type") || !strcmp(k, "at") || json_is_null(v))
            continue;
        sbuf_adds(&b, first ? ": " : ", ");
        first = 0;
        slack_add(&b, k);
        sbuf_adds(&b, "=");
        if (json_is_string(v)) {
            slack_add(&b, json_string_value(v));
        } else {
            char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            if (t != NULL)
                slack_add(&b, t);
            free(t);
        }
        if (b.len > SLACK_MAX)
            break;
    }
    size_t len;
    char *text = sbuf_take(&b, &len);
    if (text == NULL)
        return NULL;
    char *cut = utf8_dup(text, len, SLACK_MAX);
    free(text);
    return cut;
}

char *wh_payload(int slack, const char *event_doc)
{
    json_t *ev = json_loads(event_doc, JSON_REJECT_DUPLICATES, NULL);
    const char *type = json_string_value(json_object_get(ev, "type"));
    const char *at = json_string_value(json_object_get(ev, "at"));
    char *out = NULL;
    if (!json_is_object(ev) || type == NULL || at == NULL)
        goto done;
    if (slack) {
        char *text = slack_text(ev, type, at);
        json_t *o = text ? json_pack("{s:s}", "text", text) : NULL;
        out = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        free(text);
        goto done;
    }
    /* The event's own text (as the event stream sends it), wrapped. */
    json_t *t = json_string(type), *a = json_string(at);
    char *ts = t ? json_dumps(t, JSON_ENCODE_ANY) : NULL,
         *as = a ? json_dumps(a, JSON_ENCODE_ANY) : NULL;
    if (ts != NULL && as != NULL) {
        struct sbuf b;
        sbuf_init(&b, strlen(event_doc) + 96);
        sbuf_printf(&b, "{\"type\":%s,\"timestamp\":%s,\"data\":", ts, as);
        sbuf_adds(&b, event_doc);
        sbuf_adds(&b, "}");
        out = sbuf_take(&b, NULL);
    }
    free(ts);
    free(as);
    json_decref(t);
    json_decref(a);
done:
    json_decref(ev);
    return out;
}

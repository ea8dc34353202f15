/* test_webhook.c — Standard Webhooks signatures against the specification's published
 * example, the secret's text form, the receiver address and URL policy, the retry
 * schedule and the payloads. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/webhook.h"
#include "tests/unit/unit.h"

/* The example of the Standard Webhooks specification and its reference libraries
 * (standardwebhooks 1.1.1 for Node signs it the same way; tests/api/webhooks.test.js
 * verifies live deliveries with that library). */
static void test_signature_vector(void)
{
    unsigned char key[64];
    size_t keylen;
    CHECK(wh_secret_parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", key, sizeof key, &keylen) == 0);
    CHECK(keylen == 24);
    const char *body = "{\"test\": 2432232314}";
    char sig[WH_SIGNATURE_LEN + 1];
    CHECK(wh_sign(key, keylen, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, strlen(body), sig,
                  sizeof sig) == 0);
    CHECK_STR(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    /* Any change to the id, the timestamp, the body or the key changes it. */
    char other[WH_SIGNATURE_LEN + 1];
    CHECK(wh_sign(key, keylen, "msg_p5jXN8AQM9LWM0D4loKWxJeK", 1614265330, body, strlen(body),
                  other, sizeof other) == 0);
    CHECK(strcmp(sig, other) != 0);
    CHECK(wh_sign(key, keylen, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265331, body, strlen(body),
                  other, sizeof other) == 0);
    CHECK(strcmp(sig, other) != 0);
    CHECK(wh_sign(key, keylen, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, strlen(body) - 1,
                  other, sizeof other) == 0);
    CHECK(strcmp(sig, other) != 0);
    key[0] ^= 1;
    CHECK(wh_sign(key, keylen, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, strlen(body),
                  other, sizeof other) == 0);
    CHECK(strcmp(sig, other) != 0);
    /* Too small an output buffer, an empty key. */
    CHECK(wh_sign(key, keylen, "m", 1, "", 0, other, WH_SIGNATURE_LEN) == -1);
    CHECK(wh_sign(key, 0, "m", 1, "", 0, other, sizeof other) == -1);
}

static void test_secret_text(void)
{
    unsigned char key[WH_SECRET_BYTES], back[64];
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (unsigned char)(i * 37 + 11);
    char text[WH_SECRET_TEXT_LEN + 1];
    CHECK(wh_secret_text(key, sizeof key, text, sizeof text) == 0);
    CHECK(strlen(text) == WH_SECRET_TEXT_LEN && strncmp(text, "whsec_", 6) == 0);
    size_t n;
    CHECK(wh_secret_parse(text, back, sizeof back, &n) == 0);
    CHECK(n == sizeof key && memcmp(back, key, n) == 0);
    CHECK(wh_secret_parse(text + 6, back, sizeof back, &n) == 0 && n == sizeof key);
    CHECK(wh_secret_text(key, sizeof key, text, WH_SECRET_TEXT_LEN) == -1);
    CHECK(wh_secret_parse("whsec_", back, sizeof back, &n) == -1);
    CHECK(wh_secret_parse("whsec_abc", back, sizeof back, &n) == -1);
    CHECK(wh_secret_parse("whsec_ab!d", back, sizeof back, &n) == -1);
    CHECK(wh_secret_parse(text, back, 16, &n) == -1); /* longer than the room */
}

static void test_addresses(void)
{
    static const char *const never[] = {
        "169.254.169.254", "169.254.1.1", "fd00:ec2::254", "fe80::1", "0.0.0.0", "0.1.2.3",
        "::", "224.0.0.1", "255.255.255.255", "ff02::1", "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe", "100.100.100.200", "168.63.129.16", "::ffff:0.0.0.0",
        /* tunnels and translators, refused whole */
        "2002:7f00:1::1", "2002:808:808::1", "2002:a9fe:a9fe::", "2001:0:a9fe:a9fe::1",
        "64:ff9b:1::808:808", "::ffff:0:808:808"};
    static const char *const internal[] = {
        "127.0.0.1",       "127.9.9.9",       "::1",        "10.1.2.3",    "172.16.0.1",
        "172.31.255.255",  "192.168.1.1",     "100.64.0.1", "198.18.0.1",  "192.0.2.10",
        "fc00::1",         "fd12:3456::1",    "fec0::1",    "2001:db8::1", "::ffff:127.0.0.1",
        "::ffff:10.0.0.1", "64:ff9b::7f00:1", "::127.0.0.1"};
    static const char *const public_[] = {"8.8.8.8",         "1.1.1.1",        "172.32.0.1",
                                          "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"};
    const char *all = "0.0.0.0/0, ::/0";
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
        CHECK(wh_address_check(never[i], "") == WH_ADDR_FORBIDDEN);
        CHECK(wh_address_check(never[i], all) == WH_ADDR_FORBIDDEN); /* whatever is allowed */
    }
    for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++) {
        CHECK(wh_address_check(internal[i], "") == WH_ADDR_INTERNAL);
        CHECK(wh_address_check(internal[i], NULL) == WH_ADDR_INTERNAL);
        CHECK(wh_address_check(internal[i], all) == WH_ADDR_OK);
    }
    for (size_t i = 0; i < sizeof public_ / sizeof public_[0]; i++)
        CHECK(wh_address_check(public_[i], "") == WH_ADDR_OK);
    /* The allow-list lets exactly its ranges through. */
    CHECK(wh_address_check("127.0.0.5", "127.0.0.0/8") == WH_ADDR_OK);
    CHECK(wh_address_check("::ffff:127.0.0.5", "127.0.0.0/8") == WH_ADDR_OK);
    CHECK(wh_address_check("10.0.0.1", "127.0.0.0/8") == WH_ADDR_INTERNAL);
    CHECK(wh_address_check("::1", "127.0.0.0/8") == WH_ADDR_INTERNAL);
    CHECK(wh_address_check("169.254.169.254", "169.254.0.0/16") == WH_ADDR_FORBIDDEN);
    CHECK(wh_address_check("example.com", "") == WH_ADDR_INVALID);
    CHECK(wh_address_check("", "") == WH_ADDR_INVALID);
    CHECK(wh_address_check(NULL, "") == WH_ADDR_INVALID);
    CHECK(strstr(wh_address_reason(WH_ADDR_INTERNAL), "GPUFLEET_WEBHOOK_ALLOW_CIDRS") != NULL);
}

/* url against allow: want the verdict, and (when OK) the normalized form. */
static int url_is(const char *url, const char *allow, enum wh_url want, const char *norm)
{
    char *out = NULL, detail[512];
    enum wh_url got = wh_url_check(url, allow, &out, detail, sizeof detail);
    int ok = got == want && (got != WH_URL_OK ? out == NULL && detail[0] != '\0'
                                              : out != NULL && (!norm || !strcmp(out, norm)));
    if (!ok)
        printf("    # %s: got %d (%s) want %d\n", url, got, out ? out : detail, want);
    free(out);
    return ok;
}

static void test_urls(void)
{
    const char *lo = "127.0.0.0/8";
    CHECK(url_is("https://hooks.example.com/services/T0/B0/x?y=1", "", WH_URL_OK,
                 "https://hooks.example.com/services/T0/B0/x?y=1"));
    CHECK(url_is("HTTP://Example.COM:8443/a", "", WH_URL_OK, NULL));
    CHECK(url_is("http://8.8.8.8/hook", "", WH_URL_OK, "http://8.8.8.8/hook"));
    CHECK(url_is("http://[2606:4700::1111]:8080/", "", WH_URL_OK, NULL));
    CHECK(url_is("http://xn--bcher-kva.example/", "", WH_URL_OK, NULL));
    CHECK(url_is("http://localhost:8080/", "", WH_URL_OK, NULL)); /* a name: checked on connect */
    /* Numeric IPv4 forms are literals: normalized, then checked. */
    CHECK(url_is("http://2130706433/", lo, WH_URL_OK, "http://127.0.0.1/"));
    CHECK(url_is("http://2130706433/", "", WH_URL_ADDRESS, NULL));
    CHECK(url_is("http://0x7f.1/", "", WH_URL_ADDRESS, NULL));
    CHECK(url_is("http://017700000001/", "", WH_URL_ADDRESS, NULL));
    CHECK(url_is("http://0/", lo, WH_URL_ADDRESS, NULL));
    CHECK(url_is("http://127.0.0.1:9/", "", WH_URL_ADDRESS, NULL));
    CHECK(url_is("http://127.0.0.1:9/", lo, WH_URL_OK, NULL));
    CHECK(url_is("http://[::1]/", lo, WH_URL_ADDRESS, NULL));
    CHECK(url_is("http://10.0.0.1/", "", WH_URL_ADDRESS, NULL));
    CHECK(url_is("http://169.254.169.254/latest/meta-data/", "0.0.0.0/0", WH_URL_ADDRESS, NULL));
    CHECK(url_is("http://[fd00:ec2::254]/", "::/0", WH_URL_ADDRESS, NULL));
    CHECK(url_is("http://[fe80::1]/", "::/0", WH_URL_ADDRESS, NULL));
    CHECK(url_is("http://0.0.0.0:80/", "0.0.0.0/0", WH_URL_ADDRESS, NULL));
    CHECK(url_is("http://[::ffff:169.254.169.254]/", "", WH_URL_ADDRESS, NULL));
    /* Malformed or not accepted. */
    CHECK(url_is("ftp://example.com/", "", WH_URL_INVALID, NULL));
    CHECK(url_is("file:///etc/passwd", "", WH_URL_INVALID, NULL));
    CHECK(url_is("gopher://example.com/", "", WH_URL_INVALID, NULL));
    CHECK(url_is("example.com/hook", "", WH_URL_INVALID, NULL));
    CHECK(url_is("http:/example.com/", "", WH_URL_INVALID, NULL));
    CHECK(url_is("http://user:pw@example.com/", "", WH_URL_INVALID, NULL));
    CHECK(url_is("http://user@example.com/", "", WH_URL_INVALID, NULL));
    CHECK(url_is("http://example.com/#frag", "", WH_URL_INVALID, NULL));
    CHECK(url_is("http://[fe80::1%25eth0]/", "", WH_URL_INVALID, NULL));
    CHECK(url_is("http://exa mple.com/", "", WH_URL_INVALID, NULL));
    CHECK(url_is("http://b\xc3\xbc"
                 "cher.example/",
                 "", WH_URL_INVALID, NULL));
    CHECK(url_is("http://-bad.example/", "", WH_URL_INVALID, NULL));
    CHECK(url_is("http://bad_name.example/", "", WH_URL_INVALID, NULL));
    CHECK(url_is("http://example.123/", "", WH_URL_INVALID, NULL));
    CHECK(url_is("http://example.com\r\nX: y/", "", WH_URL_INVALID, NULL));
    CHECK(url_is("", "", WH_URL_INVALID, NULL));
    char big[WH_URL_MAX + 32];
    snprintf(big, sizeof big, "http://example.com/");
    memset(big + strlen(big), 'a', WH_URL_MAX);
    big[WH_URL_MAX + 1] = '\0';
    CHECK(url_is(big, "", WH_URL_INVALID, NULL));
}

static void test_backoff(void)
{
    CHECK(wh_backoff_ms(1, 5000, 3600000) == 5000);
    CHECK(wh_backoff_ms(2, 5000, 3600000) == 10000);
    CHECK(wh_backoff_ms(3, 5000, 3600000) == 20000);
    CHECK(wh_backoff_ms(10, 5000, 3600000) == 2560000);
    CHECK(wh_backoff_ms(11, 5000, 3600000) == 3600000);
    CHECK(wh_backoff_ms(1000, 5000, 3600000) == 3600000);
    /* 5 s doubling to an hour: 32 retries fit in 24 h after the first attempt (the
     * dispatcher adds one more, at the deadline). */
    int64_t t = 0;
    int n = 1;
    while (t + wh_backoff_ms(n, 5000, 3600000) < 86400000LL)
        t += wh_backoff_ms(n++, 5000, 3600000);
    CHECK(n == 33);
}

static void test_payloads(void)
{
    const char *doc = "{\"id\":42,\"type\":\"host.state\",\"at\":\"2026-01-02T03:04:05.000006Z\","
                      "\"pool_id\":null,\"host_id\":\"8b3c4a52-7b7e-4a55-9a2b-3f1e2d3c4b5a\","
                      "\"from\":\"ready\",\"to\":\"<draining> & co\"}";
    char *std = wh_payload(0, doc);
    CHECK(std != NULL);
    char want[1024];
    snprintf(want, sizeof want,
             "{\"type\":\"host.state\",\"timestamp\":\"2026-01-02T03:04:05.000006Z\",\"data\":%s}",
             doc);
    CHECK_STR(std, want);
    free(std);
    char *slack = wh_payload(1, doc);
    CHECK(slack != NULL);
    json_t *o = json_loads(slack, JSON_REJECT_DUPLICATES, NULL);
    free(slack);
    CHECK(o != NULL && json_object_size(o) == 1);
    const char *text = json_string_value(json_object_get(o, "text"));
    int good = text && strstr(text, "host.state") && strstr(text, "event 42") &&
               strstr(text, "to=&lt;draining&gt; &amp; co") && !strchr(text, '<') &&
               !strstr(text, "pool_id");
    json_decref(o);
    CHECK(good);
    CHECK(wh_payload(0, "not json") == NULL);
    CHECK(wh_payload(0, "{\"id\":1}") == NULL);
    CHECK(wh_payload(1, "[1]") == NULL);
}

UNIT_SUITE(webhook_tests) = {
    {"webhook: signature equals the Standard Webhooks example", test_signature_vector},
    {"webhook: whsec_ secret text round trip", test_secret_text},
    {"webhook: address policy (never, unless allowed, public)", test_addresses},
    {"webhook: URL validation", test_urls},
    {"webhook: retry schedule", test_backoff},
    {"webhook: standard and slack payloads", test_payloads},
    UNIT_END,
};

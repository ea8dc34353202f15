/* test_util.c — time, encodings, hashing, secrets, HKDF. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/jw.h"
#include "common/secret.h"
#include "common/util.h"
#include "tests/unit/unit.h"

static void rfc3339_roundtrip(void)
{
    char buf[40];
    util_rfc3339(1796017303123456LL, buf, sizeof buf);
    CHECK_STR(buf, "2026-11-30T05:41:43.123456Z");
    int64_t us;
    CHECK(util_parse_rfc3339(buf, &us) == 0 && us == 1796017303123456LL);
    CHECK(util_parse_rfc3339("2026-11-30T06:41:43.123456+01:00", &us) == 0 &&
          us == 1796017303123456LL);
    CHECK(util_parse_rfc3339("2026-11-30T05:41:43Z", &us) == 0 && us == 1796017303000000LL);
}

static void rfc3339_rejects(void)
{
    int64_t us;
    CHECK(util_parse_rfc3339("2026-02-30T00:00:00Z", &us) != 0);
    CHECK(util_parse_rfc3339("2025-02-29T00:00:00Z", &us) != 0);
    CHECK(util_parse_rfc3339("2024-02-29T00:00:00Z", &us) == 0);
    CHECK(util_parse_rfc3339("2026-11-30 05:41:43Z", &us) != 0);
    CHECK(util_parse_rfc3339("2026-11-30T05:41:43", &us) != 0);
    CHECK(util_parse_rfc3339("2026-11-30T24:00:00Z", &us) != 0);
    CHECK(util_parse_rfc3339("2026-11-30T05:41:43.Z", &us) != 0);
    CHECK(util_parse_rfc3339("2026-11-30T05:41:43Zjunk", &us) != 0);
    CHECK(util_parse_rfc3339("", &us) != 0);
}

static void b64url_vectors(void)
{
    /* RFC 4648 §10 vectors, base64url without padding. */
    const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *out[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        char *e = util_b64url_encode((const unsigned char *)in[i], strlen(in[i]));
        CHECK_STR(e, out[i]);
        unsigned char *d;
        size_t n;
        CHECK(util_b64url_decode(e, strlen(e), &d, &n) == 0);
        CHECK(n == strlen(in[i]) && memcmp(d, in[i], n) == 0);
        free(d);
        free(e);
    }
    unsigned char bytes[] = {0xfb, 0xff};
    char *e = util_b64url_encode(bytes, 2);
    CHECK_STR(e, "-_8");
    free(e);
}

static void b64url_rejects(void)
{
    unsigned char *d;
    size_t n;
    CHECK(util_b64url_decode("Zm9v=", 5, &d, &n) != 0); /* padding */
    CHECK(util_b64url_decode("Zm+v", 4, &d, &n) != 0);  /* standard alphabet */
    CHECK(util_b64url_decode("Z", 1, &d, &n) != 0);     /* impossible length */
    CHECK(util_b64url_decode("Zh", 2, &d, &n) != 0);    /* non-zero trailing bits */
}

static void uuid_format(void)
{
    char u[UTIL_UUID_LEN + 1], v[UTIL_UUID_LEN + 1];
    util_uuid4(u);
    util_uuid4(v);
    CHECK(util_is_uuid(u) && util_is_uuid(v) && strcmp(u, v) != 0);
    CHECK(u[14] == '4');
    CHECK(strchr("89ab", u[19]) != NULL);
    CHECK(u[8] == '-' && u[13] == '-' && u[18] == '-' && u[23] == '-' && u[36] == '\0');
    CHECK(strspn(u, "0123456789abcdef-") == UTIL_UUID_LEN);
    CHECK(!util_is_uuid("not-a-uuid"));
    CHECK(!util_is_uuid("123e4567-e89b-12d3-a456-42661417400"));
    CHECK(!util_is_uuid("123e4567-e89b-12d3-a456-4266141740000"));
    CHECK(!util_is_uuid("123e4567xe89b-12d3-a456-426614174000"));
}

static void durations_and_numbers(void)
{
    long s;
    CHECK(util_parse_duration("15m", &s) == 0 && s == 900);
    CHECK(util_parse_duration("90", &s) == 0 && s == 90);
    CHECK(util_parse_duration("2h", &s) == 0 && s == 7200);
    CHECK(util_parse_duration("7d", &s) == 0 && s == 604800);
    CHECK(util_parse_duration("0m", &s) != 0);
    CHECK(util_parse_duration("-5m", &s) != 0);
    CHECK(util_parse_duration("5w", &s) != 0);
    CHECK(util_parse_duration("m", &s) != 0);
    CHECK(util_parse_duration("99999999d", &s) != 0);
    long v;
    CHECK(util_parse_long("500", 1, 500, &v) == 0 && v == 500);
    CHECK(util_parse_long("501", 1, 500, &v) != 0);
    CHECK(util_parse_long("0", 1, 500, &v) != 0);
    CHECK(util_parse_long("12a", 1, 500, &v) != 0);
    CHECK(util_parse_long(" 12", 1, 500, &v) != 0);
    CHECK(util_parse_long("", 1, 500, &v) != 0);
    CHECK(util_parse_long("99999999999999999999999", 1, 500, &v) != 0);
}

static void sha256_vector(void)
{
    char hex[65];
    util_sha256_hex("abc", 3, hex);
    CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    /* the empty input, and a second call (the digest is fetched once, then reused) */
    util_sha256_hex("", 0, hex);
    CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    unsigned char md[32];
    util_sha256("abc", 3, md);
    CHECK(md[0] == 0xba && md[31] == 0xad);
}

static void hkdf_rfc5869_case1(void)
{
    unsigned char ikm[22], salt[13], info[10], okm[42];
    memset(ikm, 0x0b, sizeof ikm);
    for (int i = 0; i < 13; i++)
        salt[i] = (unsigned char)i;
    for (int i = 0; i < 10; i++)
        info[i] = (unsigned char)(0xf0 + i);
    CHECK(secret_hkdf_sha256(ikm, sizeof ikm, salt, sizeof salt, info, sizeof info, okm,
                             sizeof okm) == 0);
    static const unsigned char want[42] = {
        0x3c, 0xb2, 0x5f, 0x25, 0xfa, 0xac, 0xd5, 0x7a, 0x90, 0x43, 0x4f, 0x64, 0xd0, 0x36,
        0x2f, 0x2a, 0x2d, 0x2d, 0x0a, 0x90, 0xcf, 0x1a, 0x5a, 0x4c, 0x5d, 0xb0, 0x2d, 0x56,
        0xec, 0xc4, 0xc5, 0xbf, 0x34, 0x00, 0x72, 0x08, 0xd5, 0xb8, 0x87, 0x18, 0x58, 0x65};
    CHECK(memcmp(okm, want, sizeof want) == 0);
}

static void secret_files(void)
{
    char dir[] = "/tmp/gpufleet-unit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/key", dir);
    CHECK(secret_keygen(path, err, sizeof err) == 0);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(secret_keygen(path, err, sizeof err) != 0); /* never overwrites */
    unsigned char *buf;
    size_t len;
    CHECK(secret_read_file(path, &buf, &len, err, sizeof err) == 0);
    CHECK(len == 64 && memchr(buf, '\n', len) == NULL);
    secret_free(buf, len);

    /* A trailing newline is stripped; a short file is refused. */
    char p2[128];
    snprintf(p2, sizeof p2, "%s/short", dir);
    FILE *f = fopen(p2, "w");
    fputs("0123456789012345678901234567890\n", f); /* 31 bytes + newline */
    fclose(f);
    CHECK(chmod(p2, 0600) == 0);
    CHECK(secret_read_file(p2, &buf, &len, err, sizeof err) != 0);
    CHECK(strstr(err, "at least 32") != NULL);
    f = fopen(p2, "w");
    fputs("01234567890123456789012345678901\r\n", f);
    fclose(f);
    CHECK(secret_read_file(p2, &buf, &len, err, sizeof err) == 0 && len == 32);
    secret_free(buf, len);

    /* Any bit for the group or others refuses the file, naming it and its mode; a public
     * key file may be world-readable. */
    static const mode_t open_modes[] = {0640, 0604, 0644, 0620, 0602, 0610, 0601, 0660};
    for (size_t i = 0; i < sizeof open_modes / sizeof open_modes[0]; i++) {
        CHECK(chmod(p2, open_modes[i]) == 0);
        CHECK(secret_read_file(p2, &buf, &len, err, sizeof err) != 0);
        char want[16];
        snprintf(want, sizeof want, "mode %04o", (unsigned)open_modes[i]);
        CHECK(strstr(err, want) != NULL);
        CHECK(strstr(err, p2) != NULL);
    }
    CHECK(chmod(p2, 0644) == 0);
    CHECK(secret_read_public_file(p2, &buf, &len, err, sizeof err) == 0 && len == 32);
    secret_free(buf, len);
    CHECK(chmod(p2, 0400) == 0);
    CHECK(secret_read_file(p2, &buf, &len, err, sizeof err) == 0 && len == 32);
    secret_free(buf, len);
    CHECK(secret_read_file("/nonexistent/x", &buf, &len, err, sizeof err) != 0);
    unlink(path);
    unlink(p2);
    rmdir(dir);
}

static void json_writer(void)
{
    struct jw w;
    jw_init(&w, 8);
    jw_obj(&w, NULL);
    jw_str(&w, "s", "a\"b\\c\nd\x01é");
    jw_int(&w, "i", -42);
    jw_num(&w, "n", 13.04);
    jw_num(&w, "whole", 2);
    jw_bool(&w, "t", 1);
    jw_str(&w, "null", NULL);
    jw_arr(&w, "a");
    jw_int(&w, NULL, 1);
    jw_obj(&w, NULL);
    jw_obj_end(&w);
    jw_arr_end(&w);
    jw_obj_end(&w);
    char *text = jw_take(&w);
    CHECK_STR(text, "{\"s\":\"a\\\"b\\\\c\\u000ad\\u0001é\",\"i\":-42,\"n\":13.04,"
                    "\"whole\":2,\"t\":true,\"null\":null,\"a\":[1,{}]}");
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    CHECK(j != NULL);
    CHECK_STR(json_string_value(json_object_get(j, "s")), "a\"b\\c\nd\x01é");
    json_decref(j);
    free(text);
}

/* Standard base64 (keys): whitespace ignored, padding optional, canonical only. */
static void b64_standard(void)
{
    unsigned char *d = NULL;
    size_t n = 0;
    CHECK(util_b64_decode("Zm9v YmFy\n", 10, &d, &n) == 0 && n == 6 && !memcmp(d, "foobar", 6));
    free(d);
    CHECK(util_b64_decode("Zm8=", 4, &d, &n) == 0 && n == 2 && !memcmp(d, "fo", 2));
    free(d);
    CHECK(util_b64_decode("Zm8", 3, &d, &n) == 0 && n == 2); /* padding optional */
    free(d);
    CHECK(util_b64_decode("+/+/", 4, &d, &n) == 0 && n == 3);
    free(d);
    CHECK(util_b64_decode("", 0, &d, &n) == 0 && n == 0);
    free(d);
    static const char *const bad[] = {"Zm9=", /* stray bits */ "Zg=a", /* pad in the middle */
                                      "Z===", "Z",
                                      "-_-_", /* url alphabet */ "Zm9v!",
                                      "Zm8=="};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(util_b64_decode(bad[i], strlen(bad[i]), &d, &n) != 0);
    CHECK(util_b64_decode("Zm\0v", 4, &d, &n) != 0);
}

UNIT_SUITE(util_tests) = {
    {"util: standard base64 through OpenSSL, canonical only", b64_standard},
    {"jw: escaping, numbers, nesting; output parses back", json_writer},
    {"util: RFC 3339 round trip and offsets", rfc3339_roundtrip},
    {"util: RFC 3339 rejects invalid dates and forms", rfc3339_rejects},
    {"util: base64url RFC 4648 vectors", b64url_vectors},
    {"util: base64url rejects padding, alphabet, length, trailing bits", b64url_rejects},
    {"util: UUID v4 format and validation", uuid_format},
    {"util: durations and strict integers", durations_and_numbers},
    {"util: SHA-256 of abc", sha256_vector},
    {"secret: HKDF-SHA256 RFC 5869 test case 1", hkdf_rfc5869_case1},
    {"secret: keygen 0600, no overwrite, newline strip, minimum length", secret_files},
    UNIT_END,
};

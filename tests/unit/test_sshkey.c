/* test_sshkey.c — OpenSSH private key parsing: every key type, fingerprints equal to
 * ssh-keygen -lf, and every refusal (encrypted, weak, PEM, truncated, tampered). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sshkey.h"
#include "tests/unit/sshkeys.inc"
#include "tests/unit/unit.h"

static enum sshkey_err parse(const char *text, struct sshkey_info *info, char *detail)
{
    return sshkey_parse(text, strlen(text), info, detail, 256);
}

static void test_types_and_fingerprints(void)
{
    static const struct {
        const char *key, *type, *fp;
        unsigned bits;
    } cases[] = {
        {ed25519_key, "ssh-ed25519", "SHA256:Rwy6cLlXhbLEYfRXPcV4hnQR5LmygRcgVJHL5eOPUNk", 256},
        {ecdsab256_key, "ecdsa-sha2-nistp256", "SHA256:4RsDXH3Y2ugfOqXQATHHPkABoSDgtYQ2tJJeqc4oDrU",
         256},
        {ecdsab384_key, "ecdsa-sha2-nistp384", "SHA256:vkt37cANsEzGqoKPBeohB90KYXGbI1IDSdjV+bcNors",
         384},
        {ecdsab521_key, "ecdsa-sha2-nistp521", "SHA256:g6v/kLf4YMBntdY6/9CXgDh2QCibZktays5cS523RoY",
         521},
        {rsab2048_key, "ssh-rsa", "SHA256:/5anfNrexaS7LatXakN72UUcHHi0IzhGFzE0sbS9l1g", 2048},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sshkey_info info;
        char detail[256];
        CHECK(parse(cases[i].key, &info, detail) == SSHKEY_OK);
        CHECK_STR(info.type, cases[i].type);
        CHECK_STR(info.fingerprint, cases[i].fp);
        CHECK(info.bits == cases[i].bits);
    }
}

static void test_whitespace_and_crlf(void)
{
    /* Leading/trailing blank lines and CRLF line ends, as pasted from Windows. */
    size_t n = strlen(ed25519_key);
    char *crlf = malloc(2 * n + 8), *w = crlf;
    *w++ = '\n';
    for (size_t i = 0; i < n; i++) {
        if (ed25519_key[i] == '\n')
            *w++ = '\r';
        *w++ = ed25519_key[i];
    }
    strcpy(w, "\n  ");
    struct sshkey_info info;
    char detail[256];
    enum sshkey_err e = parse(crlf, &info, detail);
    free(crlf);
    CHECK(e == SSHKEY_OK);
    CHECK_STR(info.fingerprint, "SHA256:Rwy6cLlXhbLEYfRXPcV4hnQR5LmygRcgVJHL5eOPUNk");
}

static void test_refusals(void)
{
    struct sshkey_info info;
    char detail[256];
    CHECK(parse(enc_key, &info, detail) == SSHKEY_ENCRYPTED);
    CHECK(strstr(detail, "passphrase-protected keys are not accepted") != NULL);
    CHECK(parse(rsa1024_key, &info, detail) == SSHKEY_WEAK);
    CHECK(strstr(detail, "1024 bits") != NULL);
    CHECK(parse(pem_key, &info, detail) == SSHKEY_INVALID);
    CHECK(strstr(detail, "ssh-keygen -p -f KEY -m OpenSSH") != NULL);
    CHECK(parse("", &info, detail) == SSHKEY_INVALID);
    CHECK(parse("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBp/Sk gpufleet", &info, detail) ==
          SSHKEY_INVALID);
    CHECK(parse("-----BEGIN OPENSSH PRIVATE KEY-----\n-----END OPENSSH PRIVATE KEY-----", &info,
                detail) == SSHKEY_INVALID);
    CHECK(parse("-----BEGIN OPENSSH PRIVATE KEY-----\n!!!!\n-----END OPENSSH PRIVATE KEY-----",
                &info, detail) == SSHKEY_INVALID);
    CHECK(info.type[0] == '\0' && info.fingerprint[0] == '\0');
}

/* Every truncation of the body (whole lines dropped) and every single-character change
 * of the base64 is refused or, where the change only touches the comment, still parses
 * to the same fingerprint — never a crash (run under ASan in make test). */
static void test_truncated_and_garbled(void)
{
    const char *keys[] = {ed25519_key, ecdsab256_key, rsab2048_key};
    for (size_t k = 0; k < 3; k++) {
        const char *key = keys[k];
        size_t n = strlen(key);
        struct sshkey_info good, info;
        char detail[256];
        CHECK(parse(key, &good, detail) == SSHKEY_OK);
        const char *end = strstr(key, "-----END");
        const char *body = strchr(key, '\n') + 1;
        /* Drop the last base64 line(s). */
        for (const char *cut = end - 1; cut > body; cut--) {
            if (cut[-1] != '\n')
                continue;
            char *t = malloc(n + 1);
            size_t head = (size_t)(cut - key);
            memcpy(t, key, head);
            strcpy(t + head, end);
            CHECK(parse(t, &info, detail) != SSHKEY_OK);
            free(t);
        }
        /* Flip single base64 characters. */
        char *t = strdup(key);
        int accepted_changes = 0;
        for (size_t i = (size_t)(body - key); i < (size_t)(end - key); i += 3) {
            if (t[i] == '\n' || t[i] == '=')
                continue;
            char orig = t[i];
            t[i] = orig == 'A' ? 'B' : 'A';
            enum sshkey_err e = parse(t, &info, detail);
            if (e == SSHKEY_OK) {
                /* Only the comment or the check values' equal pair could change unseen; the
                 * public key (hence the fingerprint) never may. */
                CHECK_STR(info.fingerprint, good.fingerprint);
                accepted_changes++;
            }
            t[i] = orig;
        }
        free(t);
        CHECK(accepted_changes <= 6); /* the comment "gpufleet-test" */
    }
}

static void test_fingerprint_function(void)
{
    /* SHA-256 of the empty string, base64 without padding. */
    char fp[64];
    sshkey_fingerprint((const unsigned char *)"", 0, fp);
    CHECK_STR(fp, "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU");
}

UNIT_SUITE(sshkey_tests) = {
    {"sshkey: ed25519/ecdsa/rsa parse with ssh-keygen fingerprints", test_types_and_fingerprints},
    {"sshkey: CRLF and surrounding whitespace", test_whitespace_and_crlf},
    {"sshkey: encrypted, weak, PEM, public and empty keys refused", test_refusals},
    {"sshkey: truncated and garbled keys refused, never a crash", test_truncated_and_garbled},
    {"sshkey: fingerprint format", test_fingerprint_function},
    UNIT_END,
};

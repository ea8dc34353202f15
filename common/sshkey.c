/* sshkey.c — see sshkey.h. The format is PROTOCOL.key in OpenSSH:
 *   "openssh-key-v1\0" string cipher, string kdf, string kdfoptions, uint32 nkeys,
 *   string pubkey[nkeys], string private-section
 * and, unencrypted, the private section is
 *   uint32 check1, uint32 check2, { string type, <key fields>, string comment }, padding
 * with padding bytes 1, 2, 3, … up to the cipher block size (8 for "none"). */
#include "common/sshkey.h"

#include "common/util.h"

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char BEGIN[] = "-----BEGIN OPENSSH PRIVATE KEY-----";
static const char END[] = "-----END OPENSSH PRIVATE KEY-----";
static const char MAGIC[] = "openssh-key-v1"; /* followed by a NUL */
static const char CONVERT[] = "use the OpenSSH format (ssh-keygen -p -f KEY -m OpenSSH)";

/* ---- a bounds-checked reader over the decoded bytes ---- */

struct rd {
    const unsigned char *p;
    size_t n;
    int bad;
};

static uint32_t rd_u32(struct rd *r)
{
    if (r->bad || r->n < 4) {
        r->bad = 1;
        return 0;
    }
    uint32_t v =
        (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
    r->p += 4;
    r->n -= 4;
    return v;
}

/* A length-prefixed string; *len receives its length. Borrowed from the buffer. */
static const unsigned char *rd_str(struct rd *r, size_t *len)
{
    uint32_t n = rd_u32(r);
    if (r->bad || n > r->n) {
        r->bad = 1;
        *len = 0;
        return NULL;
    }
    const unsigned char *s = r->p;
    r->p += n;
    r->n -= n;
    *len = n;
    return s;
}

static int str_is(const unsigned char *s, size_t n, const char *want)
{
    return s != NULL && n == strlen(want) && memcmp(s, want, n) == 0;
}

/* An mpint: positive, minimal (RFC 4251). Returns the magnitude without the sign byte. */
static const unsigned char *rd_mpint(struct rd *r, size_t *len)
{
    const unsigned char *s = rd_str(r, len);
    if (s == NULL || *len == 0 || (s[0] & 0x80) || (*len > 1 && s[0] == 0 && !(s[1] & 0x80))) {
        r->bad = 1;
        return NULL;
    }
    if (s[0] == 0) {
        s++;
        (*len)--;
    }
    return s;
}

void sshkey_fingerprint(const unsigned char *blob, size_t len, char out[64])
{
    unsigned char h[32];
    unsigned int hl = 0;
    EVP_Digest(blob, len, h, &hl, EVP_sha256(), NULL);
    unsigned char b64[48];
    int n = EVP_EncodeBlock(b64, h, 32); /* 44 characters, one '=' */
    while (n > 0 && b64[n - 1] == '=')
        n--;
    snprintf(out, 64, "SHA256:%.*s", n, (const char *)b64);
}

/* ---- key checks ---- */

struct curve {
    const char *type, *name;
    int nid;
    unsigned bits;
    size_t qlen, dmax;
};
static const struct curve curves[] = {
    {"ecdsa-sha2-nistp256", "nistp256", NID_X9_62_prime256v1, 256, 65, 32},
    {"ecdsa-sha2-nistp384", "nistp384", NID_secp384r1, 384, 97, 48},
    {"ecdsa-sha2-nistp521", "nistp521", NID_secp521r1, 521, 133, 66},
};

/* The public key in the private section equals the one derived from the private key. */
static int ed25519_matches(const unsigned char *seed, const unsigned char *pk)
{
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    unsigned char got[32];
    size_t gl = sizeof got;
    int ok = k != NULL && EVP_PKEY_get_raw_public_key(k, got, &gl) == 1 && gl == 32 &&
             memcmp(got, pk, 32) == 0;
    EVP_PKEY_free(k);
    return ok;
}

static int ecdsa_matches(const struct curve *cv, const unsigned char *d, size_t dlen,
                         const unsigned char *q, size_t qlen)
{
    EC_GROUP *g = EC_GROUP_new_by_curve_name(cv->nid);
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *bd = BN_bin2bn(d, (int)dlen, BN_secure_new());
    EC_POINT *pt = g ? EC_POINT_new(g) : NULL;
    unsigned char buf[160];
    int ok = g && ctx && bd && pt && !BN_is_zero(bd) && BN_cmp(bd, EC_GROUP_get0_order(g)) < 0 &&
             EC_POINT_mul(g, pt, bd, NULL, NULL, ctx) == 1;
    size_t n =
        ok ? EC_POINT_point2oct(g, pt, POINT_CONVERSION_UNCOMPRESSED, buf, sizeof buf, ctx) : 0;
    ok = ok && n == qlen && memcmp(buf, q, qlen) == 0;
    EC_POINT_free(pt);
    BN_clear_free(bd);
    BN_CTX_free(ctx);
    EC_GROUP_free(g);
    return ok;
}

/* n = p·q, e·d ≡ 1 mod (p−1) and mod (q−1), and iqmp·q ≡ 1 mod p. */
struct rsa_parts {
    const unsigned char *n, *e, *d, *iqmp, *p, *q;
    size_t nl, el, dl, il, pl, ql;
};

static int rsa_matches(const struct rsa_parts *k)
{
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *n = BN_bin2bn(k->n, (int)k->nl, NULL), *e = BN_bin2bn(k->e, (int)k->el, NULL);
    BIGNUM *d = BN_bin2bn(k->d, (int)k->dl, BN_secure_new());
    BIGNUM *iqmp = BN_bin2bn(k->iqmp, (int)k->il, BN_secure_new());
    BIGNUM *p = BN_bin2bn(k->p, (int)k->pl, BN_secure_new());
    BIGNUM *q = BN_bin2bn(k->q, (int)k->ql, BN_secure_new());
    BIGNUM *t = BN_secure_new(), *m = BN_secure_new();
    int ok = ctx && n && e && d && iqmp && p && q && t && m;
    ok = ok && BN_mul(t, p, q, ctx) == 1 && BN_cmp(t, n) == 0;
    /* e·d mod (p−1) and mod (q−1) */
    ok =
        ok && BN_sub(m, p, BN_value_one()) == 1 && BN_mod_mul(t, e, d, m, ctx) == 1 && BN_is_one(t);
    ok =
        ok && BN_sub(m, q, BN_value_one()) == 1 && BN_mod_mul(t, e, d, m, ctx) == 1 && BN_is_one(t);
    ok = ok && BN_mod_mul(t, iqmp, q, p, ctx) == 1 && BN_is_one(t);
    BN_clear_free(m);
    BN_clear_free(t);
    BN_clear_free(q);
    BN_clear_free(p);
    BN_clear_free(iqmp);
    BN_clear_free(d);
    BN_free(e);
    BN_free(n);
    BN_CTX_free(ctx);
    return ok;
}

static unsigned bit_length(const unsigned char *m, size_t len)
{
    while (len > 0 && m[0] == 0) {
        m++;
        len--;
    }
    if (len == 0)
        return 0;
    unsigned bits = (unsigned)(len - 1) * 8;
    for (unsigned char top = m[0]; top; top >>= 1)
        bits++;
    return bits;
}

#define FAIL(code, ...)                           \
    do {                                          \
        snprintf(detail, detaillen, __VA_ARGS__); \
        rc = (code);                              \
        goto cleanup;                             \
    } while (0)

/* Validates one key in the private section against its public blob. */
static enum sshkey_err check_private(struct rd *priv, struct rd *pub, const char *type,
                                     struct sshkey_info *out, char *detail, size_t detaillen)
{
    enum sshkey_err rc = SSHKEY_INVALID;
    size_t l1, l2, l3;
    if (strcmp(type, "ssh-ed25519") == 0) {
        const unsigned char *pk = rd_str(pub, &l1);
        const unsigned char *ppk = rd_str(priv, &l2);
        const unsigned char *sk = rd_str(priv, &l3);
        if (pub->bad || priv->bad || l1 != 32 || l2 != 32 || l3 != 64)
            FAIL(SSHKEY_INVALID, "the ed25519 key has the wrong sizes");
        if (memcmp(pk, ppk, 32) != 0 || memcmp(sk + 32, pk, 32) != 0 || !ed25519_matches(sk, pk))
            FAIL(SSHKEY_INVALID, "the ed25519 private key does not match its public key");
        out->bits = 256;
        return SSHKEY_OK;
    }
    if (strcmp(type, "ssh-rsa") == 0) {
        struct rsa_parts k;
        size_t pel, pnl;
        k.e = rd_mpint(pub, &k.el);
        k.n = rd_mpint(pub, &k.nl);
        const unsigned char *pn = rd_mpint(priv, &pnl), *pe = rd_mpint(priv, &pel);
        k.d = rd_mpint(priv, &k.dl);
        k.iqmp = rd_mpint(priv, &k.il);
        k.p = rd_mpint(priv, &k.pl);
        k.q = rd_mpint(priv, &k.ql);
        if (pub->bad || priv->bad)
            FAIL(SSHKEY_INVALID, "the rsa key is malformed");
        if (k.el != pel || k.nl != pnl || memcmp(k.e, pe, pel) != 0 || memcmp(k.n, pn, pnl) != 0)
            FAIL(SSHKEY_INVALID, "the rsa private key does not match its public key");
        out->bits = bit_length(k.n, k.nl);
        if (out->bits > 16384 || !rsa_matches(&k))
            FAIL(SSHKEY_INVALID, "the rsa private key is inconsistent");
        if (out->bits < SSHKEY_MIN_RSA_BITS)
            FAIL(SSHKEY_WEAK, "the rsa key has %u bits; at least %d are required", out->bits,
                 SSHKEY_MIN_RSA_BITS);
        return SSHKEY_OK;
    }
    for (size_t i = 0; i < sizeof curves / sizeof curves[0]; i++) {
        const struct curve *cv = &curves[i];
        if (strcmp(type, cv->type) != 0)
            continue;
        const unsigned char *c1 = rd_str(pub, &l1);
        size_t ql, pql, dl;
        const unsigned char *q = rd_str(pub, &ql);
        const unsigned char *c2 = rd_str(priv, &l2);
        const unsigned char *pq = rd_str(priv, &pql);
        const unsigned char *d = rd_mpint(priv, &dl);
        if (pub->bad || priv->bad || !str_is(c1, l1, cv->name) || !str_is(c2, l2, cv->name))
            FAIL(SSHKEY_INVALID, "the ecdsa key is malformed");
        if (ql != cv->qlen || pql != ql || q[0] != 0x04 || memcmp(q, pq, ql) != 0 || dl > cv->dmax)
            FAIL(SSHKEY_INVALID, "the ecdsa key has the wrong sizes");
        if (!ecdsa_matches(cv, d, dl, q, ql))
            FAIL(SSHKEY_INVALID, "the ecdsa private key does not match its public key");
        out->bits = cv->bits;
        return SSHKEY_OK;
    }
    FAIL(SSHKEY_INVALID, "the key type is not ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa");
cleanup:
    return rc;
}

/* The armour: BEGIN line, base64 body, END line (surrounding whitespace allowed), and the
 * body decoded into *buf, *n bytes (caller wipes and frees *buf, also on failure). */
static enum sshkey_err sshkey_unarmour(const char *text, size_t len, unsigned char **buf, size_t *n,
                                       char *detail, size_t detaillen)
{
    enum sshkey_err rc = SSHKEY_INVALID;
    while (len > 0 && strchr(" \t\r\n", text[0]) && text[0] != '\0') {
        text++;
        len--;
    }
    while (len > 0 && strchr(" \t\r\n", text[len - 1]) && text[len - 1] != '\0')
        len--;
    if (len > SSHKEY_MAX_TEXT)
        FAIL(SSHKEY_INVALID, "the key is longer than %d bytes", SSHKEY_MAX_TEXT);
    if (memchr(text, '\0', len) != NULL)
        FAIL(SSHKEY_INVALID, "the key contains a NUL byte");
    static const char *const legacy[] = {
        "-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN EC PRIVATE KEY-----",
        "-----BEGIN DSA PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----"};
    for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++)
        if (len >= strlen(legacy[i]) && memcmp(text, legacy[i], strlen(legacy[i])) == 0)
            FAIL(SSHKEY_INVALID, "this is a PEM key, not an OpenSSH key; %s", CONVERT);
    size_t bl = sizeof BEGIN - 1, el = sizeof END - 1;
    if (len < bl + el || memcmp(text, BEGIN, bl) != 0 || memcmp(text + len - el, END, el) != 0)
        FAIL(SSHKEY_INVALID, "not an OpenSSH private key (-----BEGIN OPENSSH PRIVATE KEY-----); %s",
             CONVERT);
    if (util_b64_decode(text + bl, len - bl - el, buf, n) != 0)
        FAIL(SSHKEY_INVALID, "the key body is not valid base64");
    return SSHKEY_OK;
cleanup:
    return rc;
}

/* The openssh-key-v1 container in buf[0..n): unencrypted, one key; *blob, *publen: the
 * public key; *privsec, *privlen: the private section (both point into buf). */
static enum sshkey_err sshkey_container(const unsigned char *buf, size_t n,
                                        const unsigned char **blob, size_t *publen,
                                        const unsigned char **privsec, size_t *privlen,
                                        char *detail, size_t detaillen)
{
    enum sshkey_err rc = SSHKEY_INVALID;
    struct rd r = {buf, n, 0};
    if (r.n < sizeof MAGIC || memcmp(r.p, MAGIC, sizeof MAGIC) != 0)
        FAIL(SSHKEY_INVALID, "the key does not start with openssh-key-v1");
    r.p += sizeof MAGIC;
    r.n -= sizeof MAGIC;
    size_t cl, kl, ol;
    const unsigned char *cipher = rd_str(&r, &cl);
    const unsigned char *kdf = rd_str(&r, &kl);
    rd_str(&r, &ol);
    uint32_t nkeys = rd_u32(&r);
    if (r.bad)
        FAIL(SSHKEY_INVALID, "the key header is truncated");
    if (!str_is(cipher, cl, "none") || !str_is(kdf, kl, "none"))
        FAIL(SSHKEY_ENCRYPTED, "passphrase-protected keys are not accepted; remove the "
                               "passphrase (ssh-keygen -p -f KEY -N '')");
    if (ol != 0)
        FAIL(SSHKEY_INVALID, "an unencrypted key has kdf options");
    if (nkeys != 1)
        FAIL(SSHKEY_INVALID, "the file must hold exactly one key");
    *blob = rd_str(&r, publen);
    *privsec = rd_str(&r, privlen);
    if (r.bad || r.n != 0)
        FAIL(SSHKEY_INVALID, "the key is truncated or has trailing bytes");
    if (*privlen % 8 != 0)
        FAIL(SSHKEY_INVALID, "the private section is not padded to the block size");
    return SSHKEY_OK;
cleanup:
    return rc;
}

enum sshkey_err sshkey_parse(const char *text, size_t len, struct sshkey_info *out, char *detail,
                             size_t detaillen)
{
    enum sshkey_err rc = SSHKEY_INVALID;
    unsigned char *buf = NULL;
    size_t cap = 0;
    memset(out, 0, sizeof *out);
    detail[0] = '\0';

    size_t n = 0;
    rc = sshkey_unarmour(text, len, &buf, &n, detail, detaillen);
    if (rc != SSHKEY_OK)
        goto cleanup;
    cap = n + 1; /* what is wiped at the end */
    const unsigned char *blob, *privsec;
    size_t publen, privlen;
    rc = sshkey_container(buf, n, &blob, &publen, &privsec, &privlen, detail, detaillen);
    if (rc != SSHKEY_OK)
        goto cleanup;
    rc = SSHKEY_INVALID;

    struct rd pub = {blob, publen, 0};
    size_t tl;
    const unsigned char *ptype = rd_str(&pub, &tl);
    if (pub.bad || tl == 0 || tl >= sizeof out->type)
        FAIL(SSHKEY_INVALID, "the public key is malformed");
    memcpy(out->type, ptype, tl);
    out->type[tl] = '\0';

    struct rd priv = {privsec, privlen, 0};
    uint32_t check1 = rd_u32(&priv), check2 = rd_u32(&priv);
    size_t stl;
    const unsigned char *stype = rd_str(&priv, &stl);
    if (priv.bad || check1 != check2)
        FAIL(SSHKEY_INVALID, "the private section is corrupt (check values differ)");
    if (!str_is(stype, stl, out->type))
        FAIL(SSHKEY_INVALID, "the private key type differs from the public key type");
    rc = check_private(&priv, &pub, out->type, out, detail, detaillen);
    if (rc != SSHKEY_OK)
        goto cleanup;
    rc = SSHKEY_INVALID;
    if (pub.n != 0)
        FAIL(SSHKEY_INVALID, "the public key has trailing bytes");
    size_t cml;
    rd_str(&priv, &cml); /* comment */
    if (priv.bad)
        FAIL(SSHKEY_INVALID, "the private section is truncated");
    for (size_t i = 0; i < priv.n; i++)
        if (priv.p[i] != (unsigned char)(i + 1))
            FAIL(SSHKEY_INVALID, "the private section padding is wrong");
    if (priv.n >= 8)
        FAIL(SSHKEY_INVALID, "the private section has too much padding");
    sshkey_fingerprint(blob, publen, out->fingerprint);
    rc = SSHKEY_OK;
cleanup:
    if (buf != NULL) {
        OPENSSL_cleanse(buf, cap);
        free(buf);
    }
    if (rc != SSHKEY_OK) {
        out->type[0] = '\0';
        out->fingerprint[0] = '\0';
        out->bits = rc == SSHKEY_WEAK ? out->bits : 0;
    }
    return rc;
}

/* crypt.c — see crypt.h. AES-256-GCM through OpenSSL EVP. */
#include "common/crypt.h"

#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/secret.h"
#include "common/util.h"

static struct crypt_key master;
static int master_loaded;

void crypt_secret_free(struct crypt_secret *s)
{
    if (s == NULL || s->data == NULL)
        return;
    OPENSSL_cleanse(s->data, s->len + 1);
    free(s->data);
    s->data = NULL;
    s->len = 0;
}

void crypt_key_clear(struct crypt_key *k)
{
    OPENSSL_cleanse(k, sizeof *k);
}

int crypt_key_derive(const unsigned char *ikm, size_t ikmlen, struct crypt_key *out)
{
    static const char salt[] = "gpufleet-master-key-v1", info[] = "credentials aes-256-gcm";
    if (secret_hkdf_sha256(ikm, ikmlen, (const unsigned char *)salt, sizeof salt - 1,
                           (const unsigned char *)info, sizeof info - 1, out->key,
                           sizeof out->key) != 0) {
        crypt_key_clear(out);
        return -1;
    }
    unsigned char h[32];
    util_sha256(out->key, sizeof out->key, h);
    for (int i = 0; i < CRYPT_KID_HEX / 2; i++)
        snprintf(out->kid + 2 * i, 3, "%02x", h[i]);
    OPENSSL_cleanse(h, sizeof h);
    return 0;
}

int crypt_init_from_file(const char *path, char *err, size_t errlen)
{
    unsigned char *ikm;
    size_t len;
    if (secret_read_file(path, &ikm, &len, err, errlen) != 0)
        return -1;
    struct crypt_key k;
    int rc = crypt_key_derive(ikm, len, &k);
    secret_free(ikm, len);
    if (rc != 0) {
        snprintf(err, errlen, "cannot derive a key from GPUFLEET_MASTER_KEY_FILE");
        return -1;
    }
    master = k;
    crypt_key_clear(&k);
    master_loaded = 1;
    return 0;
}

void crypt_shutdown(void)
{
    crypt_key_clear(&master);
    master_loaded = 0;
}

const struct crypt_key *crypt_master(void)
{
    return master_loaded ? &master : NULL;
}

int crypt_seal(const struct crypt_key *k, const unsigned char *pt, size_t ptlen,
               const unsigned char *aad, size_t aadlen, unsigned char nonce[CRYPT_NONCE_LEN],
               unsigned char **ct, size_t *ctlen)
{
    *ct = NULL;
    *ctlen = 0;
    if (ptlen > INT_MAX - CRYPT_TAG_LEN || aadlen > INT_MAX)
        return -1;
    if (RAND_bytes(nonce, CRYPT_NONCE_LEN) != 1)
        return -1;
    unsigned char *out = malloc(ptlen + CRYPT_TAG_LEN);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int ok = out != NULL && ctx != NULL;
    int n = 0, fin = 0;
    ok = ok && EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, CRYPT_NONCE_LEN, NULL) == 1;
    ok = ok && EVP_EncryptInit_ex(ctx, NULL, NULL, k->key, nonce) == 1;
    ok = ok && (aadlen == 0 || EVP_EncryptUpdate(ctx, NULL, &n, aad, (int)aadlen) == 1);
    ok = ok && EVP_EncryptUpdate(ctx, out, &n, pt, (int)ptlen) == 1;
    ok = ok && EVP_EncryptFinal_ex(ctx, out + n, &fin) == 1;
    ok = ok && (size_t)(n + fin) == ptlen;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, CRYPT_TAG_LEN, out + ptlen) == 1;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok) {
        free(out);
        return -1;
    }
    *ct = out;
    *ctlen = ptlen + CRYPT_TAG_LEN;
    return 0;
}

int crypt_open(const struct crypt_key *k, const unsigned char nonce[CRYPT_NONCE_LEN],
               const unsigned char *ct, size_t ctlen, const unsigned char *aad, size_t aadlen,
               struct crypt_secret *out)
{
    out->data = NULL;
    out->len = 0;
    if (ctlen < CRYPT_TAG_LEN || ctlen > INT_MAX || aadlen > INT_MAX)
        return -1;
    size_t ptlen = ctlen - CRYPT_TAG_LEN;
    unsigned char *pt = malloc(ptlen + 1);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    unsigned char tag[CRYPT_TAG_LEN];
    memcpy(tag, ct + ptlen, CRYPT_TAG_LEN);
    int ok = pt != NULL && ctx != NULL;
    int n = 0, fin = 0;
    ok = ok && EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, CRYPT_NONCE_LEN, NULL) == 1;
    ok = ok && EVP_DecryptInit_ex(ctx, NULL, NULL, k->key, nonce) == 1;
    ok = ok && (aadlen == 0 || EVP_DecryptUpdate(ctx, NULL, &n, aad, (int)aadlen) == 1);
    ok = ok && EVP_DecryptUpdate(ctx, pt, &n, ct, (int)ptlen) == 1;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, CRYPT_TAG_LEN, tag) == 1;
    /* Final fails when the tag does not verify: nothing decrypted may be used. */
    ok = ok && EVP_DecryptFinal_ex(ctx, pt + n, &fin) == 1;
    ok = ok && (size_t)(n + fin) == ptlen;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok) {
        if (pt != NULL) {
            OPENSSL_cleanse(pt, ptlen + 1);
            free(pt);
        }
        return -1;
    }
    pt[ptlen] = '\0';
    out->data = pt;
    out->len = ptlen;
    return 0;
}

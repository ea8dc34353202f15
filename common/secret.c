/* secret.c — see secret.h. */
#include "common/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

void secret_free(unsigned char *buf, size_t len)
{
    if (buf == NULL)
        return;
    OPENSSL_cleanse(buf, len);
    free(buf);
}

/* Reads path; private_file: refuse a file that its group or others may read or write. */
static int read_file(const char *path, int private_file, unsigned char **buf, size_t *len,
                     char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", path);
        close(fd);
        return -1;
    }
    if (private_file && (st.st_mode & 077) != 0) {
        snprintf(err, errlen,
                 "%s has mode %04o: a secret file must not be readable or writable by its group "
                 "or others (chmod 0600 %s, or 0400, owned by the user that runs gpufleetd)",
                 path, (unsigned)(st.st_mode & 07777), path);
        close(fd);
        return -1;
    }
    if (st.st_size > SECRET_MAX_BYTES) {
        snprintf(err, errlen, "%s is larger than %d bytes", path, SECRET_MAX_BYTES);
        close(fd);
        return -1;
    }
    size_t cap = (size_t)st.st_size + 1;
    unsigned char *b = malloc(cap);
    size_t n = 0;
    while (b != NULL && n < cap) {
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (b == NULL || n >= cap) {
        snprintf(err, errlen, "%s changed while being read", path);
        secret_free(b, cap);
        return -1;
    }
    if (n > 0 && b[n - 1] == '\n')
        n--;
    if (n > 0 && b[n - 1] == '\r')
        n--;
    if (n < SECRET_MIN_BYTES) {
        snprintf(err, errlen, "%s holds %zu bytes; at least %d are required (use gpufleetd keygen)",
                 path, n, SECRET_MIN_BYTES);
        secret_free(b, cap);
        return -1;
    }
    *buf = b;
    *len = n;
    return 0;
}

int secret_read_file(const char *path, unsigned char **buf, size_t *len, char *err, size_t errlen)
{
    return read_file(path, 1, buf, len, err, errlen);
}

int secret_read_public_file(const char *path, unsigned char **buf, size_t *len, char *err,
                            size_t errlen)
{
    return read_file(path, 0, buf, len, err, errlen);
}

int secret_keygen(const char *path, char *err, size_t errlen)
{
    unsigned char raw[48];
    if (util_random(raw, sizeof raw) != 0) {
        snprintf(err, errlen, "no random bytes available");
        return -1;
    }
    char *text = util_b64url_encode(raw, sizeof raw);
    OPENSSL_cleanse(raw, sizeof raw);
    if (text == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = -1;
    size_t len = strlen(text);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        goto cleanup;
    }
    text[len] = '\n'; /* replaces the NUL; len + 1 bytes are written */
    ssize_t w = write(fd, text, len + 1);
    if (w != (ssize_t)(len + 1) || fsync(fd) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        close(fd);
        unlink(path);
        goto cleanup;
    }
    close(fd);
    rc = 0;
cleanup:
    OPENSSL_cleanse(text, len + 1);
    free(text);
    return rc;
}

int secret_hkdf_sha256(const unsigned char *ikm, size_t ikmlen, const unsigned char *salt,
                       size_t saltlen, const unsigned char *info, size_t infolen,
                       unsigned char *out, size_t outlen)
{
    int rc = -1;
    EVP_PKEY_CTX *pctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    if (pctx == NULL)
        return -1;
    if (EVP_PKEY_derive_init(pctx) <= 0 || EVP_PKEY_CTX_set_hkdf_md(pctx, EVP_sha256()) <= 0 ||
        EVP_PKEY_CTX_set1_hkdf_salt(pctx, salt, (int)saltlen) <= 0 ||
        EVP_PKEY_CTX_set1_hkdf_key(pctx, ikm, (int)ikmlen) <= 0 ||
        EVP_PKEY_CTX_add1_hkdf_info(pctx, info, (int)infolen) <= 0)
        goto cleanup;
    size_t len = outlen;
    if (EVP_PKEY_derive(pctx, out, &len) <= 0 || len != outlen)
        goto cleanup;
    rc = 0;
cleanup:
    EVP_PKEY_CTX_free(pctx);
    return rc;
}

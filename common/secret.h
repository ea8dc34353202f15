/* secret.h — secret files (JWT HMAC secret, master key). Contents never logged. */
#ifndef GPUFLEET_SECRET_H
#define GPUFLEET_SECRET_H

#include <stddef.h>

#define SECRET_MIN_BYTES 32
#define SECRET_MAX_BYTES 65536

/* Reads a whole secret file, stripping one trailing "\n" (or "\r\n"). Caller frees *buf
 * with secret_free(). On error returns -1 and writes a one-line reason into err. A file whose
 * mode grants anything to its group or others (mode & 077) is refused: the reason names the
 * file and its mode. */
int secret_read_file(const char *path, unsigned char **buf, size_t *len, char *err, size_t errlen);
/* The same for a file that is not secret (an ES256 public key): any mode is accepted. */
int secret_read_public_file(const char *path, unsigned char **buf, size_t *len, char *err,
                            size_t errlen);
/* Zeroes and frees. */
void secret_free(unsigned char *buf, size_t len);
/* Writes a new random secret (48 random bytes, base64url, 64 chars + newline) with mode
 * 0600. Refuses to overwrite an existing file. */
int secret_keygen(const char *path, char *err, size_t errlen);
/* HKDF-SHA256 (RFC 5869) → out[outlen]. Returns 0 on success. */
int secret_hkdf_sha256(const unsigned char *ikm, size_t ikmlen, const unsigned char *salt,
                       size_t saltlen, const unsigned char *info, size_t infolen,
                       unsigned char *out, size_t outlen);

#endif

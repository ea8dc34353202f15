/* sshkey.h — OpenSSH private keys (openssh-key-v1): parse and validate an unencrypted
 * ed25519, ecdsa (nistp256/384/521) or rsa key, and name it by its public key. Pure: no
 * I/O. The decoded private bytes live only inside sshkey_parse and are cleansed. */
#ifndef GPUFLEET_SSHKEY_H
#define GPUFLEET_SSHKEY_H

#include <stddef.h>

#define SSHKEY_MAX_TEXT     16384 /* an rsa-8192 key is about 6.5 KB */
#define SSHKEY_MIN_RSA_BITS 2048

enum sshkey_err {
    SSHKEY_OK = 0,
    SSHKEY_INVALID,   /* not an OpenSSH private key, or inconsistent */
    SSHKEY_ENCRYPTED, /* passphrase-protected */
    SSHKEY_WEAK,      /* rsa below SSHKEY_MIN_RSA_BITS */
};

struct sshkey_info {
    char type[32];        /* ssh-ed25519, ecdsa-sha2-nistp256/384/521, ssh-rsa */
    char fingerprint[64]; /* SHA256:<base64 without padding> of the public key blob */
    unsigned bits;        /* 256 for ed25519, the curve size for ecdsa, modulus bits for rsa */
};

/* Parses text[len] (need not be NUL-terminated). On failure, detail gets one sentence
 * for the client; it never quotes the key. */
enum sshkey_err sshkey_parse(const char *text, size_t len, struct sshkey_info *out, char *detail,
                             size_t detaillen);

/* Fingerprint of a public key blob, as `ssh-keygen -l` prints it. */
void sshkey_fingerprint(const unsigned char *blob, size_t len, char out[64]);

#endif

/* jwks.h — the signing keys of an OpenID provider, kept current: a JWK set (RFC 7517)
 * fetched from a URL (libcurl) or read from a file, parsed by common/jwk.h, held as the
 * current key set and refreshed by a background thread. Knows no HTTP server.
 *
 * Refresh: on a schedule (refresh_s), and sooner when a lookup names an unknown kid (or
 * finds no keys) — at most one fetch per min_refresh_s, whatever asks, and after a failure
 * not before the back-off: min_refresh_s later, doubling up to refresh_s, while the cached
 * keys stay in use ("degraded"). A lookup never waits for a fetch: it answers from the
 * keys held now and leaves the fetch to the refresher (one thread: a single flight). So a
 * storm of forged kids costs the provider at most one fetch per min_refresh_s and the
 * requests nothing; the first token of a freshly rotated key is refused (401) until the
 * refresh it asked for lands, and its client retries.
 *
 * Threads: the key set is an immutable, reference-counted object (struct jwk_set); a
 * refresh builds a new one without holding any lock and swaps the pointer under a short
 * mutex. Verifying threads take a reference (jwks_lookup) and release it when done. */
#ifndef GPUFLEET_SERVICE_JWKS_H
#define GPUFLEET_SERVICE_JWKS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/jwk.h"

#define JWKS_MAX_BYTES (1024 * 1024) /* a larger document is refused unread */

/* Checks a JWKS URL: https://, or http:// to a loopback address (127.0.0.0/8, [::1],
 * localhost) for tests and sidecars. Returns 0, or -1 with a reason. */
int jwks_check_url(const char *url, char *err, size_t errlen);

struct jwks_config {
    const char *url;     /* one of url and file */
    const char *file;    /* re-read on every refresh (rotation by rewriting the file) */
    const char *ca_file; /* extra CA bundle for https (NULL: the system's) */
    int refresh_s;       /* scheduled refresh period */
    int min_refresh_s;   /* at most one fetch per this, whatever asks for it */
    int timeout_s;       /* whole-transfer timeout of one fetch */
};

struct jwks;

/* Copies c. Does not fetch. */
struct jwks *jwks_new(const struct jwks_config *c);
/* Fetches once, synchronously (start-up). Returns 0, or -1 with a reason (the holder then
 * has no keys until a background refresh succeeds). */
int jwks_load(struct jwks *j, char *err, size_t errlen);
/* Starts the background refresher. Returns 0. */
int jwks_start(struct jwks *j);
/* Stops the refresher and frees everything. */
void jwks_free(struct jwks *j);

enum jwks_lookup_result {
    JWKS_FOUND = 0,
    JWKS_NO_KEYS,    /* nothing loaded yet */
    JWKS_UNKNOWN_KID /* not in the set held now (a refresh has been asked for) */
};
/* Finds kid in the keys held now; never waits. When it is unknown (or no keys are
 * loaded), asks the refresher for a fetch (see above for when it runs) and answers at
 * once. On JWKS_FOUND, *set holds a reference the caller releases (jwk_set_release) and
 * *key points into it. */
enum jwks_lookup_result jwks_lookup(struct jwks *j, const char *kid, struct jwk_set **set,
                                    const struct jwk_key **key);
/* The generation of the current set (0 when none): it changes whenever the keys do. */
uint64_t jwks_generation(struct jwks *j);

/* For /readyz. Steals nothing; caller decrefs the returned object. status is "ok",
 * "degraded" (the last refresh failed; the cached keys still verify) or "unavailable"
 * (no keys). */
json_t *jwks_health(struct jwks *j, int *unavailable);

/* The holder /readyz reports on (set by main when JWKS is configured; NULL otherwise). */
void jwks_set_global(struct jwks *j);
struct jwks *jwks_global(void);

#endif

/* webhook.h — the pure parts of signed webhooks (no I/O, thread-safe): Standard Webhooks
 * signatures (https://www.standardwebhooks.com), the secret's text form, the URL and
 * address policy for receivers, the retry schedule and the payloads.
 *
 * Address policy for a receiver (an IP literal in the URL, or each address a name
 * resolves to when a delivery connects):
 *   - refused whatever the configuration says: what net_address_forbidden refuses for SSH
 *     targets (0.0.0.0/8, link-local 169.254.0.0/16 and fe80::/10, cloud metadata such
 *     as 169.254.169.254 and fd00:ec2::254, multicast, reserved, broadcast, and their
 *     IPv4-mapped, IPv4-compatible and NAT64 forms);
 *   - refused unless GPUFLEET_WEBHOOK_ALLOW_CIDRS contains it: loopback, private and
 *     other non-public ranges (127.0.0.0/8, ::1, 10/8, 172.16/12, 192.168/16,
 *     100.64/10, 198.18/15, the documentation ranges, fc00::/7, fec0::/10,
 *     2001:db8::/32, and the IPv4 inside NAT64 64:ff9b::/96 and 6to4 2002::/16);
 *   - allowed otherwise (public addresses). */
#ifndef GPUFLEET_WEBHOOK_H
#define GPUFLEET_WEBHOOK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define WH_SECRET_BYTES    32   /* the HMAC-SHA256 key */
#define WH_SECRET_TEXT_LEN 50   /* "whsec_" + 44 characters of base64 */
#define WH_SIGNATURE_LEN   47   /* "v1," + 44 characters of base64 */
#define WH_URL_MAX         2048 /* bytes */

/* "whsec_" + standard base64 of key into out (at least WH_SECRET_TEXT_LEN + 1 bytes for a
 * 32-byte key). Returns 0, or -1 when out is too small. */
int wh_secret_text(const unsigned char *key, size_t keylen, char *out, size_t outlen);
/* The key of a "whsec_<base64>" text (the prefix is optional) into key[*keylen]. Returns
 * 0, or -1 when it is not valid base64 or longer than keycap. */
int wh_secret_parse(const char *text, unsigned char *key, size_t keycap, size_t *keylen);

/* The webhook-signature value "v1,<base64 of HMAC-SHA256(key, msg_id "." timestamp "."
 * body)>" into out (at least WH_SIGNATURE_LEN + 1 bytes). Returns 0, or -1. */
int wh_sign(const unsigned char *key, size_t keylen, const char *msg_id, long long timestamp,
            const char *body, size_t bodylen, char *out, size_t outlen);

enum wh_addr {
    WH_ADDR_OK = 0,
    WH_ADDR_FORBIDDEN, /* never: link-local, metadata, unspecified, multicast, reserved */
    WH_ADDR_INTERNAL,  /* loopback or private, and not in the allow-list */
    WH_ADDR_INVALID,   /* not an IP literal */
};
/* May a delivery connect to address (an IPv4 or IPv6 literal, without brackets)?
 * allow_cidrs: GPUFLEET_WEBHOOK_ALLOW_CIDRS ("" or NULL: none). */
enum wh_addr wh_address_check(const char *address, const char *allow_cidrs);
/* Words for a refused address, e.g. "a loopback or private address outside
 * GPUFLEET_WEBHOOK_ALLOW_CIDRS". */
const char *wh_address_reason(enum wh_addr a);

enum wh_url {
    WH_URL_OK = 0,
    WH_URL_INVALID, /* not an absolute http(s) URL we accept: detail says why */
    WH_URL_ADDRESS, /* an IP literal the address policy refuses */
};
/* Checks a receiver URL: http:// or https:// (any case), at most WH_URL_MAX bytes of
 * printable ASCII, no user name or password, no fragment, a host that is an IP literal
 * (checked with wh_address_check now; no IPv6 zone) or a DNS name (letters, digits,
 * hyphens and dots; non-ASCII names in their xn-- form), checked at every connection.
 * On WH_URL_OK *normalized receives the URL as libcurl normalizes it (numeric IPv4
 * forms such as 2130706433 or 0x7f.1 become dotted quads; caller frees); otherwise a
 * sentence for the problem detail goes to detail. */
enum wh_url wh_url_check(const char *url, const char *allow_cidrs, char **normalized, char *detail,
                         size_t detaillen);

/* The retry schedule: the delay after the attempts-th failed attempt (attempts >= 1) is
 * base_ms * 2^(attempts - 1), at most cap_ms. */
int64_t wh_backoff_ms(int attempts, int64_t base_ms, int64_t cap_ms);

/* The body of a delivery. event: the event document (id, type, at, pool_id, host_id and
 * the type's members). standard: {"type": T, "timestamp": AT, "data": EVENT} with the
 * event's text as given; slack: {"text": "..."} (a one-line summary, Slack's &, < and >
 * escaped, at most about 3,000 bytes). Returns a malloc'd string (caller frees), NULL
 * when out of memory or when event_doc is not a JSON object with a string type and at. */
char *wh_payload(int slack, const char *event_doc);

#endif

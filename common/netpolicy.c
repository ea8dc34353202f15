/* netpolicy.c — see netpolicy.h. */
#include "common/netpolicy.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

struct ipaddr {
    int v6; /* 0: IPv4 in b[0..3]; 1: IPv6 in b[0..15] */
    unsigned char b[16];
};

/* Parses a literal; IPv4-mapped IPv6 (::ffff:a.b.c.d) becomes IPv4. */
static int ip_parse(const char *s, struct ipaddr *a)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memset(a, 0, sizeof *a);
    if (!s)
        return -1;
    if (inet_pton(AF_INET, s, a->b) == 1)
        return 0;
    if (inet_pton(AF_INET6, s, a->b) != 1)
        return -1;
    a->v6 = 1;
    if (memcmp(a->b, mapped, 12) == 0) {
        memmove(a->b, a->b + 12, 4);
        memset(a->b + 4, 0, 12);
        a->v6 = 0;
    }
    return 0;
}

static int prefix_eq(const unsigned char *x, const unsigned char *y, int bits)
{
    int full = bits / 8, rest = bits % 8;
    if (memcmp(x, y, (size_t)full) != 0)
        return 0;
    if (rest == 0)
        return 1;
    unsigned char m = (unsigned char)(0xff << (8 - rest));
    return (x[full] & m) == (y[full] & m);
}

static int v4_forbidden(const unsigned char *b)
{
    if (b[0] == 0)
        return 1; /* 0.0.0.0/8 "this network" */
    if (b[0] == 169 && b[1] == 254)
        return 1; /* link-local, cloud metadata 169.254.169.254 */
    if (b[0] >= 224)
        return 1; /* multicast 224/4, reserved 240/4, broadcast */
    if (b[0] == 100 && b[1] == 100 && b[2] == 100 && b[3] == 200)
        return 1; /* Alibaba Cloud metadata */
    if (b[0] == 168 && b[1] == 63 && b[2] == 129 && b[3] == 16)
        return 1; /* Azure wire server */
    return 0;
}

/* 1 for the IPv6 ranges that carry an IPv4 destination which this policy cannot check (or
 * which no SSH target or webhook receiver uses): refused whole. */
static int v6_tunnel(const unsigned char *b)
{
    static const unsigned char translated[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char nat64_local[6] = {0, 0x64, 0xff, 0x9b, 0, 0x01};
    if (b[0] == 0x20 && b[1] == 0x02)
        return 1; /* 6to4 2002::/16 (RFC 3056, deprecated by RFC 7526): 2002:a9fe:a9fe:: relays
                     to 169.254.169.254 */
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0)
        return 1; /* Teredo 2001::/32: the server and the (obfuscated) client are IPv4 */
    if (memcmp(b, nat64_local, 6) == 0)
        return 1; /* local-use NAT64 64:ff9b:1::/48 (RFC 8215): where the IPv4 address sits
                     depends on the translator's prefix length */
    if (memcmp(b, translated, 10) == 0 && b[10] == 0 && b[11] == 0)
        return 1; /* IPv4-translated ::ffff:0:a.b.c.d, ::ffff:0:0/96 (RFC 2765 SIIT) */
    return 0;
}

int net_address_forbidden(const char *address)
{
    static const unsigned char aws6[16] = {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0,    0,
                                           0,    0,    0,    0,    0, 0, 0x02, 0x54};
    static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    static const unsigned char zero12[12] = {0};
    struct ipaddr a;
    if (ip_parse(address, &a) != 0)
        return 1; /* not a literal: never a target */
    if (!a.v6)
        return v4_forbidden(a.b);
    if (memcmp(a.b, aws6, 16) == 0)
        return 1;
    if (a.b[0] == 0xff)
        return 1; /* multicast ff00::/8 */
    if (a.b[0] == 0xfe && (a.b[1] & 0xc0) == 0x80)
        return 1; /* link-local fe80::/10 */
    if (memcmp(a.b, zero12, 12) == 0) {
        /* :: and ::1 are special; ::a.b.c.d (deprecated IPv4-compatible) */
        static const unsigned char one[4] = {0, 0, 0, 1};
        if (memcmp(a.b + 12, one, 4) == 0)
            return 0; /* ::1 loopback */
        return memcmp(a.b + 12, zero12, 4) == 0 ? 1 : v4_forbidden(a.b + 12);
    }
    if (memcmp(a.b, nat64, 12) == 0)
        return v4_forbidden(a.b + 12);
    return v6_tunnel(a.b);
}

int net_cidr_match(const char *address, const char *cidr_list)
{
    struct ipaddr a;
    int matched = 0;
    if (ip_parse(address, &a) != 0 || !cidr_list)
        return -1;
    const char *p = cidr_list;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *end = p;
        while (*end && *end != ',' && *end != ' ' && *end != '\t')
            end++;
        char item[80];
        size_t len = (size_t)(end - p);
        if (len >= sizeof item)
            return -1;
        memcpy(item, p, len);
        item[len] = '\0';
        p = end;

        int bits = -1;
        char *slash = strchr(item, '/');
        if (slash) {
            char *e2;
            *slash = '\0';
            if (!slash[1])
                return -1;
            long v = strtol(slash + 1, &e2, 10);
            if (*e2 || v < 0 || v > 128)
                return -1;
            bits = (int)v;
        }
        struct ipaddr net;
        if (ip_parse(item, &net) != 0)
            return -1;
        int maxbits = net.v6 ? 128 : 32;
        if (bits < 0)
            bits = maxbits;
        if (bits > maxbits)
            return -1;
        if (net.v6 == a.v6 && prefix_eq(a.b, net.b, bits))
            matched = 1;
    }
    return matched;
}

enum net_target_verdict net_ssh_target(const char *address, const char *allow_cidrs)
{
    if (address == NULL || net_address_forbidden(address))
        return NET_TARGET_FORBIDDEN;
    return net_cidr_match(address, allow_cidrs ? allow_cidrs : "") == 1 ? NET_TARGET_OK
                                                                        : NET_TARGET_NOT_ALLOWED;
}

const char *net_target_why(enum net_target_verdict v)
{
    switch (v) {
    case NET_TARGET_OK: return "the address is an allowed SSH target";
    case NET_TARGET_FORBIDDEN:
        return "the address is link-local, a cloud metadata address or otherwise never an SSH "
               "target";
    case NET_TARGET_NOT_ALLOWED: return "the address is not in GPUFLEET_SSH_ALLOW_CIDRS";
    }
    return "the address is not an allowed SSH target";
}

/* netpolicy.h — which network addresses gpufleet may connect to on a user's
 * say-so (SSH targets, webhook receivers). Pure and thread-safe. */
#ifndef GPUFLEET_NETPOLICY_H
#define GPUFLEET_NETPOLICY_H

/* Address policy helpers (pure, thread-safe). */
/* 1 if the address must never be a target (SSH host, webhook URL), or is not a literal IP:
 * 0.0.0.0/8, 169.254.0.0/16 (link-local, cloud metadata), 224.0.0.0/4
 * (multicast), 240.0.0.0/4 (reserved, broadcast), 100.100.100.200 (Alibaba
 * metadata), 168.63.129.16 (Azure wire server); ::, fe80::/10, ff00::/8,
 * fd00:ec2::254 (AWS metadata); IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible
 * and NAT64 (64:ff9b::/96) forms of the IPv4 rules; and, whole, the ranges that
 * tunnel or translate to an IPv4 address this policy cannot check: 6to4 2002::/16,
 * Teredo 2001::/32, local-use NAT64 64:ff9b:1::/48 and IPv4-translated
 * ::ffff:0:0/96 (::ffff:0:a.b.c.d, not the IPv4-mapped ::ffff:a.b.c.d). Loopback and private
 * ranges are NOT forbidden here (use the allow-list). Otherwise 0. */
int net_address_forbidden(const char *address);
/* 1 if address lies in one of the comma-separated CIDRs ("127.0.0.0/8,
 * 10.0.0.0/8, fd00::/8"; a bare address means /32 or /128; spaces allowed),
 * 0 if not, -1 if the address or any list entry is malformed. An
 * IPv4-mapped IPv6 address is matched as IPv4. */
int net_cidr_match(const char *address, const char *cidr_list);

/* The one SSH-target rule, asked at registration, before a job connects and before the
 * monitor connects: a literal address that is not forbidden (net_address_forbidden) and
 * lies in the allow list (GPUFLEET_SSH_ALLOW_CIDRS; an empty or malformed list allows
 * nothing). */
enum net_target_verdict {
    NET_TARGET_OK = 0,
    NET_TARGET_FORBIDDEN,   /* link-local, metadata, multicast, … : never a target */
    NET_TARGET_NOT_ALLOWED, /* not in the allow list */
};
enum net_target_verdict net_ssh_target(const char *address, const char *allow_cidrs);
/* The verdict in words, naming the address (e.g. for a 409 or a job's error). */
const char *net_target_why(enum net_target_verdict v);

#endif

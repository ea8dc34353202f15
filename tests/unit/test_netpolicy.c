/* test_netpolicy.c — common/netpolicy.c: the addresses gpufleet never connects to on a
 * user's say-so (SSH targets, webhook receivers), and the CIDR allow-lists. */
#include <string.h>

#include "common/netpolicy.h"
#include "tests/unit/unit.h"

static void forbidden_and_allow_lists(void)
{
    CHECK(net_address_forbidden("169.254.169.254") == 1);              /* metadata v4 */
    CHECK(net_address_forbidden("169.254.1.1") == 1);                  /* link-local v4 */
    CHECK(net_address_forbidden("fd00:ec2::254") == 1);                /* metadata v6 */
    CHECK(net_address_forbidden("fe80::1") == 1);                      /* link-local v6 */
    CHECK(net_address_forbidden("febf::1") == 1);                      /* link-local v6 /10 end */
    CHECK(net_address_forbidden("fec0::1") == 0);                      /* fec0 is not fe80::/10 */
    CHECK(net_address_forbidden("0.0.0.0") == 1);                      /* 0.0.0.0 */
    CHECK(net_address_forbidden("::") == 1);                           /* :: */
    CHECK(net_address_forbidden("224.0.0.1") == 1);                    /* multicast */
    CHECK(net_address_forbidden("255.255.255.255") == 1);              /* broadcast */
    CHECK(net_address_forbidden("ff02::1") == 1);                      /* v6 multicast */
    CHECK(net_address_forbidden("::ffff:169.254.169.254") == 1);       /* v4-mapped metadata */
    CHECK(net_address_forbidden("64:ff9b::a9fe:a9fe") == 1);           /* NAT64 metadata */
    CHECK(net_address_forbidden("2002:a9fe:a9fe::") == 1);             /* 6to4 of metadata */
    CHECK(net_address_forbidden("2002:a01:203::1") == 1);              /* 6to4, any v4 */
    CHECK(net_address_forbidden("2001:0:a9fe:a9fe::1") == 1);          /* Teredo */
    CHECK(net_address_forbidden("64:ff9b:1::a9fe:a9fe") == 1);         /* local NAT64 */
    CHECK(net_address_forbidden("64:ff9b:1:ffff::1") == 1);            /* local NAT64 /48 */
    CHECK(net_address_forbidden("::ffff:0:a9fe:a9fe") == 1);           /* v4-translated */
    CHECK(net_address_forbidden("::ffff:0:a00:1") == 1);               /* v4-translated */
    CHECK(net_address_forbidden("2003::1") == 0);                      /* next to 6to4 */
    CHECK(net_address_forbidden("2001:1::1") == 0);                    /* next to Teredo */
    CHECK(net_address_forbidden("64:ff9b:2::1") == 0);                 /* next to local NAT64 */
    CHECK(net_address_forbidden("64:ff9b::a00:1") == 0);               /* NAT64 of 10.0.0.1 */
    CHECK(net_address_forbidden("example.com") == 1);                  /* host name */
    CHECK(net_address_forbidden("") == 1);                             /* empty */
    CHECK(net_address_forbidden("127.0.0.5") == 0);                    /* loopback allowed here */
    CHECK(net_address_forbidden("10.1.2.3") == 0);                     /* private allowed here */
    CHECK(net_address_forbidden("::1") == 0);                          /* ::1 */
    CHECK(net_address_forbidden("2001:db8::1") == 0);                  /* global v6 */
    CHECK(net_cidr_match("127.0.0.5", "127.0.0.0/8") == 1);            /* 127.0.0.5 in 127/8 */
    CHECK(net_cidr_match("10.1.2.3", "127.0.0.0/8") == 0);             /* 10.1.2.3 not in 127/8 */
    CHECK(net_cidr_match("10.1.2.3", "127.0.0.0/8, 10.0.0.0/8") == 1); /* list */
    CHECK(net_cidr_match("10.1.2.3", "10.1.2.3") == 1);                /* bare address */
    CHECK(net_cidr_match("10.1.2.4", "10.1.2.3") == 0);                /* bare address no */
    CHECK(net_cidr_match("192.168.1.129", "192.168.1.128/25") == 1);   /* /25 */
    CHECK(net_cidr_match("192.168.1.127", "192.168.1.128/25") == 0);   /* /25 no */
    CHECK(net_cidr_match("1.2.3.4", "0.0.0.0/0") == 1);                /* /0 */
    CHECK(net_cidr_match("fd12::1", "fd00::/8") == 1);                 /* v6 */
    CHECK(net_cidr_match("fd12::1", "10.0.0.0/8") == 0);               /* v6 vs v4 list */
    CHECK(net_cidr_match("::ffff:10.0.0.1", "10.0.0.0/8") == 1);       /* mapped */
    CHECK(net_cidr_match("10.0.0.1", "10.0.0.0/33") == -1);            /* bad prefix */
    CHECK(net_cidr_match("10.0.0.1", "10.0.0/8") == -1);               /* bad net */
    CHECK(net_cidr_match("nope", "10.0.0.0/8") == -1);                 /* bad address */
}

/* The one SSH-target rule: forbidden beats allowed, an empty or malformed list allows
 * nothing. */
static void ssh_target_rule(void)
{
    CHECK(net_ssh_target("127.0.0.5", "127.0.0.0/8") == NET_TARGET_OK);
    CHECK(net_ssh_target("10.1.2.3", "127.0.0.0/8") == NET_TARGET_NOT_ALLOWED);
    CHECK(net_ssh_target("169.254.169.254", "0.0.0.0/0") == NET_TARGET_FORBIDDEN);
    CHECK(net_ssh_target("fd00:ec2::254", "::/0") == NET_TARGET_FORBIDDEN);
    CHECK(net_ssh_target("127.0.0.5", "") == NET_TARGET_NOT_ALLOWED);
    CHECK(net_ssh_target("127.0.0.5", NULL) == NET_TARGET_NOT_ALLOWED);
    CHECK(net_ssh_target("127.0.0.5", "127.0.0/8") == NET_TARGET_NOT_ALLOWED); /* malformed */
    CHECK(net_ssh_target(NULL, "0.0.0.0/0") == NET_TARGET_FORBIDDEN);
    CHECK(net_ssh_target("example.com", "0.0.0.0/0") == NET_TARGET_FORBIDDEN);
    CHECK(strstr(net_target_why(NET_TARGET_NOT_ALLOWED), "GPUFLEET_SSH_ALLOW_CIDRS") != NULL);
    CHECK(strstr(net_target_why(NET_TARGET_FORBIDDEN), "metadata") != NULL);
}

UNIT_SUITE(netpolicy_tests) = {
    {"netpolicy: one SSH-target rule (forbidden, not in the allow list, allowed)", ssh_target_rule},
    {"netpolicy: metadata, link-local, multicast and non-literals refused; CIDR lists",
     forbidden_and_allow_lists},
    UNIT_END,
};

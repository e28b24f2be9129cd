/* The network plan of mode restricted (lib/plan-net.c), white-box: names
 * resolved through a hosts file the test writes (never the host's
 * resolver), rules sorted and deduplicated, the sandbox's /etc/hosts lines,
 * and each refusal typed with its JSON path. No sandbox, no packet. */
#include <arpa/inet.h>
#include <check.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "linux/linux-netlink.h"
#endif

#include "plan.h"
#include "policy.h"

static char hosts_path[64];

static void write_hosts(const char *text) {
    FILE *f = fopen(hosts_path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void setup(void) {
    snprintf(hosts_path, sizeof(hosts_path), "/tmp/fy-netplan-%d.hosts", (int)getpid());
    write_hosts("# test\n198.51.100.7 mirror.test alias.test\n2001:db8::7 mirror.test\n198.51.100.8 other.test\n");
}
static void teardown(void) { unlink(hosts_path); }

/* Builds the network plan of dests (host, proto, lo, hi) under restricted. */
struct d { const char *host; uint32_t proto, lo, hi; };
static uint32_t build_mode = FY_NET_RESTRICTED;
static int build(const struct d *ds, size_t n, struct fy_plan *pl, fy_error **e) {
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_network_host(p, FY_NETHOST_HOSTS_FILE, hosts_path, NULL), 0);
    struct plan_dest *pd = calloc(n, sizeof(*pd));
    for (size_t i = 0; i < n; i++)
        pd[i] = (struct plan_dest){ds[i].host, ds[i].proto, ds[i].lo, ds[i].hi};
    memset(pl, 0, sizeof(*pl));
    pl->net_mode = build_mode;
    pl->dests = pd;
    pl->ndests = n;
    int r = plan_net_build(pl, p, e);
    fy_policy_free(p);
    return r;
}
static void done(struct fy_plan *pl) {
    free((void *)pl->dests);
    arena_free(&pl->arena);
}

START_TEST(test_names_resolve_sorted_and_deduplicated) {
    struct d ds[] = {
        {"mirror.test", FY_PROTO_TCP, 443, 443},
        {"198.51.100.0/24", FY_PROTO_UDP, 53, 53},
        {"alias.test", FY_PROTO_TCP, 443, 443},          /* the same tuple as mirror.test's IPv4 */
        {"2001:db8::/33", FY_PROTO_TCP, 8000, 8099},
        {"198.51.100.9/24", FY_PROTO_TCP, 80, 80},       /* host bits cleared */
    };
    struct fy_plan pl;
    fy_error *e = NULL;
    ck_assert_msg(build(ds, 5, &pl, &e) == 0, "%s", fy_error_message(e));
    const char *want[] = {"198.51.100.0/24 tcp 80-80", "198.51.100.0/24 udp 53-53", "198.51.100.7/32 tcp 443-443",
                          "2001:db8::/33 tcp 8000-8099", "2001:db8::7/128 tcp 443-443"};
    ck_assert_uint_eq(pl.nnet_rules, 5);
    for (size_t i = 0; i < 5; i++) {
        char t[96];
        ck_assert_str_eq(plan_net_rule_text(&pl.net_rules[i], t, sizeof(t)), want[i]);
    }
    ck_assert_uint_eq(pl.net_rules[2].dest, 0); /* the first destination names a shared tuple */
    /* ...but every name keeps its addresses: alias.test's line and its DNS
     * stub answers were lost with the merged rule (two names of one CDN
     * address: the second never resolved inside). */
    ck_assert_str_eq(pl.net_hosts, "198.51.100.7\tmirror.test\n198.51.100.7\talias.test\n2001:db8::7\tmirror.test\n");
    ck_assert_uint_eq(pl.nnet_name_rules, 3);
    bool alias = false;
    for (size_t i = 0; i < pl.nnet_name_rules; i++)
        alias = alias || (pl.net_name_rules[i].dest == 2 && pl.net_name_rules[i].family == 4);
    ck_assert_msg(alias, "alias.test has no address for the DNS stub");
    done(&pl);
    /* An address first, then a name of it with the same tuple: the name
     * still has its line. And a line is found whole: 1.2.3.4's is not
     * inside 11.2.3.4's. */
    write_hosts("198.51.100.7 mirror.test\n11.2.3.4 a.test\n1.2.3.4 a.test\n");
    struct d ds2[] = {
        {"198.51.100.7", FY_PROTO_TCP, 443, 443},
        {"mirror.test", FY_PROTO_TCP, 443, 443},
        {"a.test", FY_PROTO_TCP, 80, 80},
    };
    ck_assert_msg(build(ds2, 3, &pl, &e) == 0, "%s", fy_error_message(e));
    ck_assert_str_eq(pl.net_hosts, "1.2.3.4\ta.test\n11.2.3.4\ta.test\n198.51.100.7\tmirror.test\n");
    done(&pl);
}
END_TEST

START_TEST(test_refusals_are_typed_and_named) {
    struct fy_plan pl;
    fy_error *e = NULL;
    struct d unresolved[] = {{"mirror.test", FY_PROTO_TCP, 443, 443}, {"nosuch.test", FY_PROTO_TCP, 80, 80}};
    ck_assert_int_eq(build(unresolved, 2, &pl, &e), FY_E_NOTFOUND);
    ck_assert_str_eq(fy_error_location(e), "$.network.destinations[1].host");
    ck_assert_int_eq(fy_error_step(e), FY_STEP_PREPARE);
    fy_error_free(e);
    e = NULL;
    done(&pl);

    /* An address of one of the host's own interfaces is refused (the
     * sandbox would reach the host itself through the router); loopback is
     * not the host's from inside (the sandbox has its own) and is accepted. */
    struct ifaddrs *ifs = NULL, *it;
    char own_addr[INET6_ADDRSTRLEN] = "";
    ck_assert_int_eq(getifaddrs(&ifs), 0);
    for (it = ifs; it && !own_addr[0]; it = it->ifa_next)
        if (it->ifa_addr && it->ifa_addr->sa_family == AF_INET && !(it->ifa_flags & IFF_LOOPBACK))
            inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)it->ifa_addr)->sin_addr, own_addr, sizeof(own_addr));
    freeifaddrs(ifs);
    if (own_addr[0]) {
        struct d own[] = {{own_addr, FY_PROTO_TCP, 80, 80}};
        ck_assert_int_eq(build(own, 1, &pl, &e), FY_E_POLICY);
        ck_assert_str_eq(fy_error_location(e), "$.network.destinations[0].host");
        ck_assert_ptr_nonnull(strstr(fy_error_message(e), "an address of this host"));
        fy_error_free(e);
        e = NULL;
        done(&pl);
        /* ... in its IPv4-mapped IPv6 spelling too (a socket connecting to
         * ::ffff:a.b.c.d reaches a.b.c.d), as a name's mapped AAAA too */
        char mapped[INET6_ADDRSTRLEN + 8];
        snprintf(mapped, sizeof(mapped), "::ffff:%s", own_addr);
        struct d own6[] = {{mapped, FY_PROTO_TCP, 80, 80}};
        ck_assert_int_eq(build(own6, 1, &pl, &e), FY_E_POLICY);
        ck_assert_str_eq(fy_error_location(e), "$.network.destinations[0].host");
        ck_assert_ptr_nonnull(strstr(fy_error_message(e), "an address of this host"));
        fy_error_free(e);
        e = NULL;
        done(&pl);
        char line[128];
        snprintf(line, sizeof(line), "%s own-mapped.test\n", mapped);
        write_hosts(line);
        struct d own_name[] = {{"own-mapped.test", FY_PROTO_TCP, 80, 80}};
        ck_assert_int_eq(build(own_name, 1, &pl, &e), FY_E_POLICY);
        ck_assert_ptr_nonnull(strstr(fy_error_message(e), "an address of this host"));
        fy_error_free(e);
        e = NULL;
        done(&pl);
    } else {
        fprintf(stderr, "netplan: no non-loopback IPv4 address here: the own-address refusal is not exercised\n");
    }
    struct d loop[] = {{"127.0.0.0/8", FY_PROTO_TCP, 80, 80}, {"::1", FY_PROTO_UDP, 53, 53}};
    ck_assert_int_eq(build(loop, 2, &pl, &e), 0);
    done(&pl);

    /* A name with 5,000 addresses: more rules than a plan may hold. */
    FILE *f = fopen(hosts_path, "w");
    for (int i = 0; i < 5000; i++)
        fprintf(f, "10.%d.%d.1 many.test\n", 20 + i / 250, i % 250);
    fclose(f);
    struct d many[] = {{"many.test", FY_PROTO_TCP, 443, 443}};
    ck_assert_int_eq(build(many, 1, &pl, &e), FY_E_RANGE);
    ck_assert_str_eq(fy_error_location(e), "$.network.destinations");
    fy_error_free(e);
    e = NULL;
    done(&pl);

    /* A hosts file that is not there. */
    unlink(hosts_path);
    struct d gone[] = {{"mirror.test", FY_PROTO_TCP, 443, 443}};
    ck_assert_int_eq(build(gone, 1, &pl, &e), FY_E_NOTFOUND);
    ck_assert_str_eq(fy_error_location(e), "$.network.host");
    fy_error_free(e);
    done(&pl);
}
END_TEST

/* An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address a.b.c.d
 * to any socket that connects to it (the kernel sends IPv4): every rule
 * inside ::ffff:0:0/96, given as an address, a block or by a name whose
 * AAAA is mapped, becomes its IPv4 form before anything reads the rules,
 * so the own- and special-address checks and every backend see IPv4. A
 * block that contains all of ::ffff:0:0/96 is refused. */
START_TEST(test_mapped_addresses_are_ipv4) {
    write_hosts("198.51.100.7 mirror.test\n::ffff:198.51.100.9 mapped.test\n");
    struct d ds[] = {
        {"mirror.test", FY_PROTO_TCP, 443, 443},
        {"::ffff:198.51.100.7", FY_PROTO_TCP, 443, 443},  /* the same tuple as mirror.test's */
        {"::ffff:198.51.100.0/120", FY_PROTO_UDP, 53, 53},
        {"mapped.test", FY_PROTO_TCP, 80, 80},
    };
    struct fy_plan pl;
    fy_error *e = NULL;
    ck_assert_msg(build(ds, 4, &pl, &e) == 0, "%s", fy_error_message(e));
    const char *want[] = {"198.51.100.0/24 udp 53-53", "198.51.100.7/32 tcp 443-443", "198.51.100.9/32 tcp 80-80"};
    ck_assert_uint_eq(pl.nnet_rules, 3);
    for (size_t i = 0; i < 3; i++) {
        char t[96];
        ck_assert_str_eq(plan_net_rule_text(&pl.net_rules[i], t, sizeof(t)), want[i]);
        ck_assert_uint_eq(pl.net_rules[i].family, 4);
    }
    ck_assert_str_eq(pl.net_hosts, "198.51.100.7\tmirror.test\n198.51.100.9\tmapped.test\n");
    done(&pl);

    /* Special IPv4 addresses in their mapped spelling: refused as IPv4
     * ("this network": connecting to ::ffff:0.0.0.0 reaches the host). */
    static const struct { const char *host, *why; } special[] = {
        {"::ffff:0.0.0.0", "this network"},
        {"::ffff:255.255.255.255", "broadcast"},
        {"::ffff:240.0.0.0/100", "broadcast"},
        {"::ffff:224.0.0.1", "IPv4 multicast"},
        {"::ffff:0.0.0.0/96", "every IPv4 address"},
        {"::/80", "::ffff:0:0/96"},
        {"::/64", "::ffff:0:0/96"},
        {"::ff00:0:0/88", "::ffff:0:0/96"},
    };
    for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
        struct d one[] = {{"mirror.test", FY_PROTO_TCP, 443, 443}, {special[i].host, FY_PROTO_TCP, 80, 80}};
        ck_assert_msg(build(one, 2, &pl, &e) == FY_E_POLICY, "%s accepted", special[i].host);
        ck_assert_str_eq(fy_error_location(e), "$.network.destinations[1].host");
        ck_assert_msg(strstr(fy_error_message(e), special[i].why), "%s: %s", special[i].host, fy_error_message(e));
        fy_error_free(e);
        e = NULL;
        done(&pl);
    }
    /* Blocks beside ::ffff:0:0/96 stay IPv6: the IPv4-compatible ::/96
     * (:: itself is refused as unspecified), 64:ff9b::/96 (NAT64), and a
     * block inside ::ffff:0:0/96 is IPv4. */
    struct d v6[] = {{"64:ff9b::/96", FY_PROTO_TCP, 80, 80}, {"::ffff:198.51.100.128/121", FY_PROTO_TCP, 80, 80}};
    ck_assert_msg(build(v6, 2, &pl, &e) == 0, "%s", fy_error_message(e));
    ck_assert_uint_eq(pl.nnet_rules, 2);
    char t[96];
    ck_assert_str_eq(plan_net_rule_text(&pl.net_rules[0], t, sizeof(t)), "198.51.100.128/25 tcp 80-80");
    ck_assert_str_eq(plan_net_rule_text(&pl.net_rules[1], t, sizeof(t)), "64:ff9b::/96 tcp 80-80");
    done(&pl);
}
END_TEST

/* fetch-only: names resolved as under restricted, but each destination
 * keeps its own rules (the proxy connects by the name the request gives)
 * and the sandbox's /etc/hosts gets no name. */
START_TEST(test_fetch_only_keeps_each_name) {
    struct d ds[] = {{"mirror.test", FY_PROTO_TCP, 443, 443}, {"alias.test", FY_PROTO_TCP, 443, 443}};
    struct fy_plan pl;
    fy_error *e = NULL;
    build_mode = FY_NET_FETCH_ONLY;
    ck_assert_int_eq(build(ds, 2, &pl, &e), 0);
    build_mode = FY_NET_RESTRICTED;
    /* mirror.test: 198.51.100.7 and 2001:db8::7; alias.test: 198.51.100.7 */
    ck_assert_uint_eq(pl.nnet_rules, 3);
    unsigned for_alias = 0;
    for (size_t i = 0; i < pl.nnet_rules; i++)
        for_alias += pl.net_rules[i].dest == 1;
    ck_assert_uint_eq(for_alias, 1);
    ck_assert(!pl.net_hosts || !*pl.net_hosts);
    done(&pl);
    /* The same under restricted: one rule names both. */
    ck_assert_int_eq(build(ds, 2, &pl, &e), 0);
    ck_assert_uint_eq(pl.nnet_rules, 2);
    done(&pl);
}
END_TEST

START_TEST(test_other_modes_have_no_rules) {
    struct d ds[] = {{"nosuch.test", FY_PROTO_TCP, 80, 80}};
    struct fy_plan pl;
    fy_error *e = NULL;
    fy_policy *p = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL), 0);
    memset(&pl, 0, sizeof(pl));
    /* (deny and allow take no destinations; nothing is resolved for them) */
    for (uint32_t mode = FY_NET_DENY; mode <= FY_NET_ALLOW; mode += FY_NET_ALLOW - FY_NET_DENY) {
        memset(&pl, 0, sizeof(pl));
        pl.net_mode = mode;
        pl.dests = (const struct plan_dest *)&(struct plan_dest){ds[0].host, ds[0].proto, 80, 80};
        pl.ndests = 1;
        ck_assert_int_eq(plan_net_build(&pl, p, &e), 0);
        ck_assert_uint_eq(pl.nnet_rules, 0);
        ck_assert_ptr_null(pl.net_hosts);
    }
    fy_policy_free(p);
}
END_TEST

START_TEST(test_host_settings) {
    fy_policy *p = NULL;
    fy_error *e = NULL;
    ck_assert_int_eq(fy_policy_new(FY_PROFILE_STANDARD_CI, &p, NULL), 0);
    ck_assert_int_eq(fy_policy_set_network_host(p, 0, "/x", &e), FY_E_UNSUPPORTED);
    fy_error_free(e);
    e = NULL;
    ck_assert_int_eq(fy_policy_set_network_host(p, FY_NETHOST_MAX_ + 1, "/x", &e), FY_E_UNSUPPORTED);
    fy_error_free(e);
    e = NULL;
    ck_assert_int_eq(fy_policy_set_network_host(p, FY_NETHOST_UPLINK, "relative/ns", &e), FY_E_POLICY);
    fy_error_free(e);
    e = NULL;
    static const char *const bad_subnets[] = {"100.127.0.0/8", "100.127.0.0/25", "100.127.0.1/16", "100.64.0.0/16",
                                              "100.64.0.0/24", "300.1.0.0/16", "100.127.0.0", "100.127.0.0/16x"};
    for (size_t i = 0; i < sizeof(bad_subnets) / sizeof(bad_subnets[0]); i++) {
        ck_assert_msg(fy_policy_set_network_host(p, FY_NETHOST_LINK_SUBNET, bad_subnets[i], &e) == FY_E_INVAL, "%s",
                      bad_subnets[i]);
        ck_assert_str_eq(fy_error_location(e), "$.network.host");
        fy_error_free(e);
        e = NULL;
    }
    ck_assert_int_eq(fy_policy_set_network_host(p, FY_NETHOST_LINK_SUBNET, "10.99.0.0/16", NULL), 0);
    ck_assert_int_eq(fy_policy_set_network_host(p, FY_NETHOST_UPLINK, "/run/netns/x", NULL), 0);
    /* Host plumbing: kept across a profile reset, copied with the policy. */
    const char *reset = "{\"profile\": \"standard-ci\"}";
    ck_assert_int_eq(fy_policy_load_json(p, reset, strlen(reset), NULL), 0);
    ck_assert_str_eq(p->net_host[FY_NETHOST_LINK_SUBNET], "10.99.0.0/16");
    ck_assert_str_eq(p->net_host[FY_NETHOST_UPLINK], "/run/netns/x");
    ck_assert_int_eq(fy_policy_set_network_host(p, FY_NETHOST_UPLINK, NULL, NULL), 0);
    ck_assert_ptr_null(p->net_host[FY_NETHOST_UPLINK]);
    fy_policy_free(p);
}
END_TEST

#ifdef __linux__
/* An address the host put on its loopback interface (a service or anycast
 * address on lo) is the host's like any other: the host delivers a packet
 * for it locally whatever interface it came in on, so a rule covering it
 * lets the sandbox reach the host's services through the router. Only
 * loopback addresses themselves (127/8, ::1) are the sandbox's own. Here
 * in a network namespace of the test's own (a child, so nothing of the
 * host changes): 198.18.0.77 and 2001:db8:77::1 on its lo. Exit status:
 * 0 all refused and 127.0.0.0/8 still accepted, 10 + the failing step. */
struct fy_in6_ifreq {
    struct in6_addr addr;
    uint32_t prefixlen;
    int ifindex;
};

static int lo_addresses_child(void) {
    if (unshare(geteuid() == 0 ? CLONE_NEWNET : CLONE_NEWUSER | CLONE_NEWNET) != 0)
        return 2;
    int s4 = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), s6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    if (s4 < 0 || ioctl(s4, SIOCGIFFLAGS, &ifr) < 0)
        return 3;
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(s4, SIOCSIFFLAGS, &ifr) < 0)
        return 3;
    int lo = (int)if_nametoindex("lo");
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo:fy");
    struct sockaddr_in *sin = (struct sockaddr_in *)(void *)&ifr.ifr_addr;
    sin->sin_family = AF_INET;
    inet_pton(AF_INET, "198.18.0.77", &sin->sin_addr);
    if (ioctl(s4, SIOCSIFADDR, &ifr) < 0)
        return 4;
    struct fy_in6_ifreq r6 = {.prefixlen = 128, .ifindex = lo};
    inet_pton(AF_INET6, "2001:db8:77::1", &r6.addr);
    if (s6 < 0 || lo <= 0 || ioctl(s6, SIOCSIFADDR, &r6) < 0)
        return 5;
    struct fy_plan pl;
    fy_error *e = NULL;
    const struct d cases[][1] = {{{"198.18.0.77", FY_PROTO_TCP, 80, 80}},
                                 {{"198.18.0.0/24", FY_PROTO_TCP, 443, 443}},
                                 {{"2001:db8:77::1", FY_PROTO_TCP, 80, 80}},
                                 {{"::ffff:198.18.0.77", FY_PROTO_TCP, 80, 80}}};
    for (int i = 0; i < 4; i++) {
        int r = build(cases[i], 1, &pl, &e);
        bool named = r == FY_E_POLICY && strstr(fy_error_message(e), "an address of this host") != NULL;
        fy_error_free(e);
        e = NULL;
        done(&pl);
        if (!named)
            return 10 + i;
    }
    struct d loop[] = {{"127.0.0.0/8", FY_PROTO_TCP, 80, 80}, {"::1", FY_PROTO_UDP, 53, 53}};
    int r = build(loop, 2, &pl, &e);
    fy_error_free(e);
    done(&pl);
    return r == 0 ? 0 : 19;
}

START_TEST(test_addresses_on_loopback_interface) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(lo_addresses_child());
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st), "the child ended with status %d", st);
    if (WEXITSTATUS(st) >= 2 && WEXITSTATUS(st) <= 5) {
        fprintf(stderr, "netplan: no network namespace of our own (step %d): the loopback-interface case is not "
                        "exercised\n", WEXITSTATUS(st));
        return;
    }
    ck_assert_msg(WEXITSTATUS(st) == 0, "step %d: %s", WEXITSTATUS(st),
                  WEXITSTATUS(st) == 19 ? "loopback addresses refused" : "an address on lo was accepted");
}
END_TEST
/* A host delivers locally not only its interfaces' unicast addresses but
 * their IPv4 broadcast address and, for each IPv6 prefix (when it
 * forwards), the subnet-router anycast address (the prefix, host bits
 * zero): a datagram to one reaches every wildcard-bound service of the
 * host. A rule covering either is refused like an own address. Here in a
 * network namespace of the test's own with a veth pair: 198.18.5.1/24
 * (broadcast 198.18.5.255) and 2001:db8:5::1:5/64 (anycast 2001:db8:5::)
 * on fyt0. Exit status: 0 as expected, 10 + the failing case. */
static int broadcast_anycast_child(void) {
    if (unshare(geteuid() == 0 ? CLONE_NEWNET : CLONE_NEWUSER | CLONE_NEWNET) != 0)
        return 2;
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (self < 0 || nl < 0 || lnl_link_veth(lnl_ready(nl), "fyt0", "fyt1", self) < 0)
        return 3;
    int s4 = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), s6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "fyt0");
    struct sockaddr_in *sin = (struct sockaddr_in *)(void *)&ifr.ifr_addr;
    sin->sin_family = AF_INET;
    inet_pton(AF_INET, "198.18.5.1", &sin->sin_addr);
    if (s4 < 0 || ioctl(s4, SIOCSIFADDR, &ifr) < 0)
        return 4;
    inet_pton(AF_INET, "255.255.255.0", &sin->sin_addr);
    if (ioctl(s4, SIOCSIFNETMASK, &ifr) < 0)
        return 4;
    inet_pton(AF_INET, "198.18.5.255", &sin->sin_addr);
    if (ioctl(s4, SIOCSIFBRDADDR, &ifr) < 0)
        return 4;
    struct fy_in6_ifreq r6 = {.prefixlen = 64, .ifindex = (int)if_nametoindex("fyt0")};
    inet_pton(AF_INET6, "2001:db8:5::1:5", &r6.addr);
    if (s6 < 0 || r6.ifindex <= 0 || ioctl(s6, SIOCSIFADDR, &r6) < 0)
        return 5;
    struct fy_plan pl;
    fy_error *e = NULL;
    static const struct { const char *host, *why; } cases[] = {
        {"198.18.5.255", "the broadcast address of this host's fyt0"},
        {"198.18.5.128/25", "the broadcast address of this host's fyt0"},
        {"::ffff:198.18.5.255", "the broadcast address of this host's fyt0"},
        {"2001:db8:5::", "the subnet-router anycast address of this host's 2001:db8:5::/64 (fyt0)"},
        {"2001:db8:5::/112", "the subnet-router anycast address of this host's 2001:db8:5::/64 (fyt0)"},
        {"198.18.5.2", NULL}, /* neither: accepted */
        {"2001:db8:5::2", NULL},
    };
    for (int i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
        const struct d one[] = {{cases[i].host, FY_PROTO_UDP, 514, 514}};
        int r = build(one, 1, &pl, &e);
        bool ok = cases[i].why ? r == FY_E_POLICY && strstr(fy_error_message(e), cases[i].why) != NULL &&
                                     strcmp(fy_error_location(e), "$.network.destinations[0].host") == 0
                               : r == 0;
        if (!ok)
            fprintf(stderr, "netplan: %s: %d %s\n", cases[i].host, r, e ? fy_error_message(e) : "");
        fy_error_free(e);
        e = NULL;
        done(&pl);
        if (!ok)
            return 10 + i;
    }
    return 0;
}

START_TEST(test_broadcast_and_anycast_addresses) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(broadcast_anycast_child());
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st), "the child ended with status %d", st);
    if (WEXITSTATUS(st) >= 2 && WEXITSTATUS(st) <= 5) {
        fprintf(stderr, "netplan: no network namespace with a veth of our own (step %d): the broadcast and anycast "
                        "cases are not exercised\n", WEXITSTATUS(st));
        return;
    }
    ck_assert_msg(WEXITSTATUS(st) == 0, "case %d accepted or refused wrongly", WEXITSTATUS(st) - 10);
}
END_TEST
#endif

int main(void) {
    Suite *s = suite_create("netplan");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_names_resolve_sorted_and_deduplicated);
    tcase_add_test(tc, test_refusals_are_typed_and_named);
    tcase_add_test(tc, test_mapped_addresses_are_ipv4);
    tcase_add_test(tc, test_fetch_only_keeps_each_name);
    tcase_add_test(tc, test_other_modes_have_no_rules);
    tcase_add_test(tc, test_host_settings);
#ifdef __linux__
    tcase_add_test(tc, test_addresses_on_loopback_interface);
    tcase_add_test(tc, test_broadcast_and_anycast_addresses);
#endif
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

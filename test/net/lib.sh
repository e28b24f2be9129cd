# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the network tests (test-net.sh, test-net-rootless.sh,
# test-net-helper.sh, test-jobnet.sh): the fake internet and the checks they
# share. Every namespace and server made here is the test's own (a unique
# name prefix), removed by the EXIT trap, even on failure. No packet of any
# test goes anywhere but to an address of a namespace the test made.
#
#   . lib.sh; net_init TMP-PREFIX
#   net_fake_internet NS ECHO-SERVER.PY     198.51.100.1/24, .2/32, 2001:db8::1/64, ::2/128
#                                           on NS's loopback, TCP and UDP echo servers on
#                                           8080 and 9090; NS is made here
#   net_ns_state NS                         its links, routes and address count (compare
#                                           before/after: nothing_left)
#   nothing_left_cmp WHAT NAME BEFORE AFTER bad/ok on two state files
#   net_probes FILE [LINE...]               the probe script of the restricted tests:
#                                           the common matrix against the fake internet,
#                                           then each LINE ("t NAME fy-netprobe-ARGS")

fail=0
NET_NAMESPACES=
NET_PIDS=
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }

net_cleanup() {
    local p n
    for p in $NET_PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    for n in $NET_NAMESPACES; do ip netns del "$n" 2>/dev/null; done
    [ -n "${TMP:-}" ] && rm -rf "$TMP"
}

# net_init PREFIX: TMP, the traps. A test with more to clean defines
# net_cleanup_extra, which runs first.
net_init() {
    TMP=$(mktemp -d "/tmp/$1.XXXXXX") || exit 1
    trap 'type net_cleanup_extra >/dev/null 2>&1 && net_cleanup_extra; net_cleanup' EXIT
    trap 'exit 1' INT TERM
}

# net_netns NAME: a namespace of the test's, removed at the end.
net_netns() {
    ip netns add "$1" || exit 1
    NET_NAMESPACES="$NET_NAMESPACES $1"
    ip -n "$1" link set lo up
}

# net_bg CMD...: a background process of the test's, killed at the end
# (its pid in NET_LAST_PID).
net_bg() {
    "$@" &
    NET_LAST_PID=$!
    NET_PIDS="$NET_PIDS $NET_LAST_PID"
}

# net_echo NS ECHO READY-FILE LOG: the TCP and UDP echo servers (8080, 9090)
# in NS; waits until they listen (exits the test if they never do).
net_echo() {
    local ns=$1 echo=$2 ready=$3 log=$4
    net_bg ip netns exec "$ns" timeout 580 python3 "$echo" "$ready" 570 8080 9090 >"$log" 2>&1
    SRV=$NET_LAST_PID
    for _ in $(seq 50); do [ -s "$ready" ] && break; sleep 0.1; done
    [ -s "$ready" ] || { echo "echo server did not start"; cat "$log"; exit 1; }
}

# net_fake_internet NS ECHO [PREFIX4 PREFIX6]: NS made, the fake internet's
# addresses on its loopback (the first of each family with PREFIX4/6, /24
# and /64 by default: its routes), the echo servers started.
net_fake_internet() {
    local ns=$1 echo=$2 p4=${3:-24} p6=${4:-64}
    net_netns "$ns"
    for a in 198.51.100.1/$p4 198.51.100.2/32; do ip -n "$ns" addr add $a dev lo; done
    for a in 2001:db8::1/$p6 2001:db8::2/128; do ip -n "$ns" addr add $a dev lo nodad; done
    net_echo "$ns" "$echo" "$TMP/ready" "$TMP/server.log"
}

# What a namespace of the test's holds (for nothing_left): links, routes,
# the number of addresses.
net_ns_state() {
    ip -n "$1" -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
    ip -n "$1" route show table all | sort
    ip -n "$1" -6 route show table all | sort
    ip -n "$1" addr show | grep -c inet
}

# nothing_left_cmp WHAT LABEL BEFORE AFTER: 0 when the two state files are
# the same, else a failure with the difference.
nothing_left_cmp() {
    if ! cmp -s "$3" "$4"; then
        bad "$1: $2 changed"; diff "$3" "$4"
        return 1
    fi
    return 0
}

# net_probes FILE [LINE...]: the sandbox's probe script (run with
# /opt/fyprobe/fy-netprobe): the allowed tuples of the tests' common
# policy (198.51.100.1:8080 tcp, :9090/udp, [2001:db8::1]:8080, and
# 198.51.100.2:9090 tcp so that Landlock, which only knows ports, lets
# 9090 through and the router alone must stop the others) and every
# neighbour of them, then the caller's LINEs. Prints "NAME RC" per probe,
# its output to stderr. One try each: the library starts nothing before its
# links run (lnl_links_running), so no packet is lost to a link coming up.
net_probes() {
    local f=$1 l
    shift
    cat >"$f" <<'IN'
P=/opt/fyprobe/fy-netprobe
t() {
    name=$1; shift
    o=$("$P" "$@" 2>&1); rc=$?
    echo "$name $rc"; echo "$name: $o" >&2
}
t tcp4-allowed tcp 198.51.100.1 8080
t udp4-allowed udp 198.51.100.1 9090
t tcp6-allowed tcp 2001:db8::1 8080
t tcp4-other-allowed tcp 198.51.100.2 9090
t tcp4-other-port tcp 198.51.100.1 9090
t udp4-other-port udp 198.51.100.1 8080
t tcp4-other-addr tcp 198.51.100.2 8080
t udp4-other-addr udp 198.51.100.2 9090
t tcp6-other-port tcp 2001:db8::1 9090
t udp6-blocked udp 2001:db8::1 8080
t tcp6-other-addr tcp 2001:db8::2 8080
t icmp4 icmp 198.51.100.1
t icmp6 icmp 2001:db8::1
IN
    for l in "$@"; do printf '%s\n' "$l" >>"$f"; done
}

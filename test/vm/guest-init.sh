#!/bin/sh
# /init of the test guest (busybox ash as PID 1); run-in-guest.sh copies it in.
# Sets up a pure cgroup2 hierarchy:
#   /sys/fs/cgroup                      root, subtree_control: +memory +pids +cpu +io
#   /sys/fs/cgroup/forgeyard-tests      FY_TEST_CGROUP: empty, same controllers
#                                       enabled for its children
#   /sys/fs/cgroup/runner               leaf holding this init and the test
# then runs the program from /fy/argv and prints
#   FY-GUEST-EXIT=<status> run=<nonce>
# before powering off (ACPI GED on microvm ends QEMU).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

fail() {
	echo "FY-GUEST-SETUP-FAILED: $*"
	sync
	poweroff -f
	sleep 2
	reboot -f
}

mount -t devtmpfs -o mode=0755,nosuid devtmpfs /dev || fail "mount devtmpfs"
exec </dev/null >/dev/console 2>&1
mount -t proc -o nosuid,nodev,noexec proc /proc || fail "mount proc"
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys || fail "mount sysfs"
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=000 devpts /dev/pts || fail "mount devpts"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm || fail "mount /dev/shm"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp || fail "mount /tmp"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run || fail "mount /run"
ln -sf /proc/self/fd /dev/fd 2>/dev/null
# Program output goes through the tty layer: no \n -> \r\n translation.
stty -onlcr 2>/dev/null
hostname fy-guest
ip link set lo up 2>/dev/null

# Pure cgroup v2, mounted the way systemd mounts it.
cg=/sys/fs/cgroup
mount -t cgroup2 -o nosuid,nodev,noexec,nsdelegate,memory_recursiveprot cgroup2 $cg ||
	fail "mount cgroup2 on $cg"
for c in memory pids cpu io; do
	grep -qw "$c" $cg/cgroup.controllers || fail "controller $c missing from $cg/cgroup.controllers: $(cat $cg/cgroup.controllers)"
	echo "+$c" >$cg/cgroup.subtree_control || fail "enable $c in $cg/cgroup.subtree_control"
done
mkdir $cg/forgeyard-tests $cg/runner || fail "mkdir cgroups"
for c in memory pids cpu io; do
	echo "+$c" >$cg/forgeyard-tests/cgroup.subtree_control || fail "enable $c in forgeyard-tests/cgroup.subtree_control"
done
echo $$ >$cg/runner/cgroup.procs || fail "move init into $cg/runner"

export FY_TEST_CGROUP=$cg/forgeyard-tests
export FY_IN_GUEST=1
export HOME=/root TMPDIR=/tmp LANG=C.UTF-8 TERM=dumb USER=root LOGNAME=root
. /fy/env
nonce=$(cat /fy/nonce)
cd "$(cat /fy/cwd)" 2>/dev/null || cd /tmp
. /fy/argv

"$@"
rc=$?
echo "FY-GUEST-EXIT=$rc run=$nonce"
sync
poweroff -f
sleep 2
reboot -f

#!/bin/busybox sh
# shellcheck shell=dash
# /init of the test guest (busybox ash as PID 1, whatever /bin/sh is in the
# image); run-in-guest.sh copies it in.
# Moves the image to a tmpfs root (so pivot_root works), mounts the usual
# filesystems and sets up a pure cgroup2 hierarchy:
#   /sys/fs/cgroup                      root, subtree_control: +memory +pids +cpu +io
#   /sys/fs/cgroup/forgeyard-tests      FY_TEST_CGROUP: empty, same controllers
#                                       enabled for its children
#   /sys/fs/cgroup/runner               leaf holding this init and the test
# then runs the program from /fy/argv and prints
#   FY-GUEST-EXIT=<status> run=<nonce>
# before powering off (ACPI GED on microvm ends QEMU).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

# Stage 1: the initramfs is the kernel's rootfs, which pivot_root(2) refuses
# (EINVAL), so sandboxes that pivot_root would fail in the guest. Copy the
# image into a tmpfs and switch_root into it; /init runs again as stage 2.
if [ -z "${FY_STAGE2:-}" ]; then
	echo "FY-GUEST-UP"   # run-in-guest.sh's boot watchdog waits for this line
	bb=/bin/busybox
	$bb mkdir -p /newroot
	$bb mount -t tmpfs -o mode=0755 fy-root /newroot || { echo "FY-GUEST-SETUP-FAILED: mount root tmpfs"; $bb poweroff -f; }
	for e in /* /.[!.]*; do
		[ -e "$e" ] || [ -L "$e" ] || continue
		[ "$e" = /newroot ] || $bb cp -a "$e" /newroot/ ||
			{ echo "FY-GUEST-SETUP-FAILED: copy $e to the root tmpfs"; $bb poweroff -f; }
	done
	export FY_STAGE2=1
	exec $bb switch_root /newroot /init
fi
unset FY_STAGE2
/bin/busybox --install -s
trace() { [ -e /fy/verbose ] && echo "fy-guest: $* (uptime $(cut -d' ' -f1 /proc/uptime))"; }

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
# /tmp and /run become tmpfs; what the image put there (PROGRAM or FY_VM_FILES
# under /tmp, the working directory) is carried over into the new mount.
for d in /tmp /run; do
	case $d in /tmp) m=1777 ;; *) m=0755 ;; esac
	mkdir -p /.fy-mnt
	mount -t tmpfs -o mode=$m,nosuid,nodev tmpfs /.fy-mnt || fail "mount tmpfs for $d"
	if [ -n "$(ls -A $d)" ]; then
		cp -a $d/. /.fy-mnt/ || fail "copy $d into its tmpfs"
		rm -rf "${d:?}"/* "${d:?}"/.[!.]* 2>/dev/null
	fi
	mount --move /.fy-mnt $d || fail "move tmpfs to $d"
done
rmdir /.fy-mnt
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
# Program output goes through the tty layer: no \n -> \r\n translation.
stty -onlcr </dev/console 2>/dev/null
hostname fy-guest
ip link set lo up 2>/dev/null
trace "mounted"

# A real block device with a file system (a 64 MiB RAM disk, ext2 by the
# ext4 driver) at /blk: what io.max throttles. FY_TEST_BLOCKDIR names it.
if [ -f /lib/fy-modules/order ]; then
	while read -r m; do
		args=""
		[ "$m" = brd.ko ] && args="rd_nr=1 rd_size=65536"
		insmod /lib/fy-modules/$m $args || fail "insmod $m"
	done </lib/fy-modules/order
	[ -b /dev/ram0 ] || fail "brd made no /dev/ram0"
	mke2fs -q /dev/ram0 >/dev/null || fail "mke2fs /dev/ram0"
	mkdir -p /blk && mount -t ext4 /dev/ram0 /blk || { dmesg | tail -n 5; fail "mount /dev/ram0"; }
	chmod 1777 /blk
	export FY_TEST_BLOCKDIR=/blk
	trace "block device ready"
fi

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
rm -f /fy/nonce   # the program cannot forge the marker line
cd "$(cat /fy/cwd)" 2>/dev/null || cd /tmp || fail "cd"
. /fy/argv

trace "cgroups ready, running $1"
"$@"
rc=$?
trace "program exited"
echo "FY-GUEST-EXIT=$rc run=$nonce"
sync
poweroff -f
sleep 2
reboot -f

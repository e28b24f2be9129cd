#!/usr/bin/env bash
# Runs one program inside a throwaway QEMU microvm guest (TCG) whose kernel
# mounts a pure cgroup2 hierarchy, and exits with the program's exit status.
#
#   test/vm/run-in-guest.sh [--timeout SECONDS] [--skip-missing] -- PROGRAM [ARGS...]
#
# --skip-missing: exit 77 (meson's "skipped") instead of 125 when QEMU or
# another host tool is not installed.
#
# Guest: Debian 12's stock kernel (linux-image-6.1.0-*-amd64, booted as an
# uncompressed PVH vmlinux) plus a per-run initramfs holding busybox-static,
# /init (guest-init.sh beside this file), PROGRAM with every shared library it
# needs, and the files listed in FY_VM_FILES. No network devices, no disks.
#
# Exit status: PROGRAM's own, read from the marker line /init prints; 125 when
# the guest reported none (setup failure, kernel panic, timeout, QEMU error).
# The console (kernel "quiet", PROGRAM's stdout+stderr, the marker
# "FY-GUEST-EXIT=<status> run=<nonce>") is copied to stdout; harness messages
# go to stderr. PROGRAM's stdin is /dev/null.
#
# In the guest: root, tmpfs root (pivot_root works), proc, sysfs, devtmpfs,
# devpts, tmpfs on /tmp /run /dev/shm, "lo" up, cgroup2 alone on
# /sys/fs/cgroup (nsdelegate,memory_recursiveprot); PROGRAM runs in the leaf
# cgroup /sys/fs/cgroup/runner, in its host working directory (created empty
# unless shipped), with FY_TEST_CGROUP=/sys/fs/cgroup/forgeyard-tests (empty,
# memory pids cpu io enabled for its children), FY_IN_GUEST=1, HOME=/root,
# TMPDIR=/tmp, PATH=/usr/sbin:/usr/bin:/sbin:/bin (busybox applets). The
# only kernel modules loaded are a RAM disk (brd, 64 MiB) and ext4 with its
# dependencies: /dev/ram0 carries an ext2 file system mounted at /blk
# (FY_TEST_BLOCKDIR), a real block device for io.max. No overlayfs, virtio.
#
# Environment (all optional):
#   FY_VM_CACHE       cache dir (default $XDG_CACHE_HOME/forgeyard-vm, else
#                     /var/tmp/forgeyard-vm); holds the extracted vmlinux only
#   FY_VM_FILES       space-separated host paths (files or dirs) copied into the
#                     guest at the same path; ELF files get their libraries too
#   FY_VM_ENV         space-separated names of host variables to pass into the
#                     guest (CK_*, ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS and
#                     MALLOC_PERTURB_ are passed when set, without asking)
#   FY_VM_TIMEOUT     default for --timeout (300)
#   FY_VM_BOOT_TIMEOUT  seconds a guest may stay silent before it is booted
#                     again, once (120)
#   FY_VM_NO_RETRY    set: a guest that came up but reported nothing within
#                     --timeout is not booted again (default: once)
#   FY_VM_MEMORY      guest RAM (default 1024M);  FY_VM_SMP  vCPUs (default 2)
#   FY_VM_APPEND      extra kernel command-line words (e.g. mitigations=off)
#   FY_VM_TSC_KHZ     guest TSC frequency in kHz (default: the host's, from
#                     /proc/cpuinfo; see "Timekeeping" below)
#   FY_QEMU           qemu-system-x86_64 to use (default: from PATH)
#   FY_VM_KERNEL      use this PVH vmlinux instead of the cached Debian one
#   FY_VM_KERNEL_DEB  build the cached vmlinux from this linux-image .deb
#                     instead of fetching it (offline use)
#   FY_VM_KEEP=1      keep the per-run work dir (initramfs tree, console log)
#   FY_VM_VERBOSE=1   print the steps and the timings to stderr
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
me="run-in-guest"
die() { echo "$me: error: $*" >&2; exit 125; }
say() { [ "${FY_VM_VERBOSE:-0}" = 1 ] && echo "$me: $*" >&2 || true; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

timeout_s=${FY_VM_TIMEOUT:-300}
skip_missing=0
while (($#)); do
  case $1 in
    --timeout) (($# >= 2)) || die "--timeout needs a value"; timeout_s=$2; shift 2 ;;
    --timeout=*) timeout_s=${1#--timeout=}; shift ;;
    --skip-missing) skip_missing=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
(($# >= 1)) || die "usage: $0 [--timeout SECONDS] [--skip-missing] -- PROGRAM [ARGS...]"
[[ $timeout_s =~ ^[0-9]+$ && $timeout_s -gt 0 ]] || die "bad --timeout '$timeout_s'"

missing() { # a host tool is missing: skip (77) with --skip-missing, else fail
  if [ "$skip_missing" = 1 ]; then echo "SKIP: $me: $* (scripts/deps.sh installs it)"; exit 77; fi
  die "$* (run scripts/deps.sh)"
}
qemu=${FY_QEMU:-$(command -v qemu-system-x86_64 || true)}
if [ -z "$qemu" ] || [ ! -x "$qemu" ]; then missing "qemu-system-x86_64 not found (package qemu-system-x86)"; fi
for tool in cpio readelf strings xz ldd flock timeout; do
  command -v "$tool" >/dev/null || missing "'$tool' not found"
done
busybox=""
for b in /bin/busybox /usr/bin/busybox "$(command -v busybox || true)"; do
  if [ -n "$b" ] && [ -x "$b" ]; then busybox=$b; break; fi
done
[ -n "$busybox" ] || missing "busybox not found (package busybox-static)"

t_start=$(now)

# ---------------------------------------------------------------- kernel ----
cache=${FY_VM_CACHE:-}
if [ -z "$cache" ]; then
  if [ -n "${XDG_CACHE_HOME:-}" ]; then cache=$XDG_CACHE_HOME/forgeyard-vm; else cache=/var/tmp/forgeyard-vm; fi
fi

has_pvh_note() {
  # XEN_ELFNOTE_PHYS32_ENTRY is Xen note type 18 (0x12); binutils 2.40 prints
  # it as an unknown type, newer ones may name it.
  readelf -n "$1" 2>/dev/null | grep -Eq '^[[:space:]]*Xen[[:space:]].*(\(0x00000012\)|PHYS32_ENTRY)'
}

# vmlinuz -> vmlinux: what the kernel's scripts/extract-vmlinux does for XZ:
# find the XZ stream magic (fd 37 7a 58 5a 00) and decompress from there.
extract_vmlinux() { # vmlinuz out
  local off
  for off in $(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$1" | cut -d: -f1); do
    # (tail may die of SIGPIPE once xz has the whole stream: judge xz alone)
    if xz -dc --single-stream < <(tail -c +"$((off + 1))" "$1") >"$2" 2>/dev/null &&
       [ "$(head -c 4 "$2" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
      return 0
    fi
  done
  return 1
}

# The modules the guest loads, in load order (dependencies first): a RAM
# block device and ext4 for it, so that io.max has a real device to throttle.
guest_modules=(crypto/crc32c_generic.ko lib/crc16.ko fs/mbcache.ko fs/jbd2/jbd2.ko fs/ext4/ext4.ko drivers/block/brd.ko)

build_kernel_from_deb() { # deb destdir
  local deb=$1 dest=$2 tmp m pats=()
  tmp=$(mktemp -d "$cache/.build.XXXXXX")
  # ./boot and five modules; a full `dpkg-deb -x` would write ~400 MB of modules.
  for m in "${guest_modules[@]}"; do pats+=("./lib/modules/*/kernel/$m"); done
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*' './boot/config-*' "${pats[@]}" ||
    { rm -rf "$tmp"; die "cannot extract ./boot and the guest modules from $deb"; }
  local vmlinuz
  vmlinuz=$(ls "$tmp"/boot/vmlinuz-* 2>/dev/null | head -1)
  [ -n "$vmlinuz" ] || { rm -rf "$tmp"; die "no /boot/vmlinuz-* in $deb"; }
  extract_vmlinux "$vmlinuz" "$tmp/vmlinux" || { rm -rf "$tmp"; die "no XZ-compressed ELF kernel found in $vmlinuz"; }
  has_pvh_note "$tmp/vmlinux" || { rm -rf "$tmp"; die "$vmlinuz: extracted vmlinux lacks the XEN_ELFNOTE_PHYS32_ENTRY (PVH) note"; }
  mkdir -p "$dest/modules"
  for m in "${guest_modules[@]}"; do
    mv "$tmp"/lib/modules/*/kernel/"$m" "$dest/modules/" || { rm -rf "$tmp"; die "$deb has no $m"; }
  done
  mv "$tmp"/boot/config-* "$dest/config" 2>/dev/null || true
  mv "$tmp/vmlinux" "$dest/vmlinux"
  basename "$deb" >"$dest/source-deb"
  rm -rf "$tmp"
}

ensure_kernel() {
  if [ -n "${FY_VM_KERNEL:-}" ]; then
    [ -f "$FY_VM_KERNEL" ] || die "FY_VM_KERNEL=$FY_VM_KERNEL does not exist"
    kernel=$FY_VM_KERNEL
    return
  fi
  mkdir -p "$cache" || die "cannot create cache dir $cache"
  exec 9>"$cache/.lock"
  flock 9
  if [ -s "$cache/current" ] && [ -f "$cache/$(cat "$cache/current")/vmlinux" ] &&
     [ -f "$cache/$(cat "$cache/current")/modules/crc32c_generic.ko" ]; then
    kernel=$cache/$(cat "$cache/current")/vmlinux
    exec 9>&-
    return
  fi
  # Leftovers of an interrupted build (only ever created under this lock).
  rm -rf "$cache"/.dl.* "$cache"/.build.*
  local t0 deb pkg ver name dl=""
  t0=$(now)
  if [ -n "${FY_VM_KERNEL_DEB:-}" ]; then
    deb=$FY_VM_KERNEL_DEB
    [ -f "$deb" ] || die "FY_VM_KERNEL_DEB=$deb does not exist"
  else
    # The ABI package linux-image-amd64 depends on (linux-image-6.1.0-NN-amd64),
    # at apt's candidate version. As root, one `apt-get update` is tried when
    # the lists are missing or name a .deb the archive no longer has.
    local try
    for try in 1 2; do
      pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
            sed -n 's/^[[:space:]]*Depends:[[:space:]]*\(linux-image-[0-9][^[:space:]]*-amd64\)$/\1/p' | head -1)
      if [ -n "$pkg" ]; then
        ver=$(apt-cache policy "$pkg" | sed -n 's/^[[:space:]]*Candidate:[[:space:]]*//p')
        deb=""
        # apt's own download cache may hold exactly this version (offline-friendly)
        local c=/var/cache/apt/archives/${pkg}_${ver//:/%3a}_amd64.deb
        if [ -f "$c" ]; then deb=$c; break; fi
        say "downloading $pkg ($ver) with apt-get download"
        dl=$(mktemp -d "$cache/.dl.XXXXXX")
        chmod 755 "$dl"
        local aptopt=()
        if [ "$(id -u)" -eq 0 ]; then aptopt=(-o APT::Sandbox::User=root); fi
        if (cd "$dl" && apt-get -q "${aptopt[@]}" download "$pkg" >"$dl/apt.log" 2>&1); then
          deb=$(ls "$dl"/*.deb | head -1)
          break
        fi
        cat "$dl/apt.log" >&2
        rm -rf "$dl"; dl=""
      fi
      if [ "$try" = 1 ] && [ "$(id -u)" -eq 0 ]; then
        echo "$me: refreshing the apt lists (apt-get update) to find the guest kernel" >&2
        apt-get update -qq >&2 || true
        continue
      fi
      if [ -z "$pkg" ]; then
        die "apt-cache does not know linux-image-amd64: run 'apt-get update' (scripts/deps.sh does it) or set FY_VM_KERNEL_DEB=/path/to/linux-image-6.1.0-*-amd64.deb"
      fi
      die "apt-get download $pkg failed: the Debian archive is needed once, on first use (offline: set FY_VM_KERNEL_DEB or FY_VM_KERNEL)"
    done
  fi
  name=$(basename "$deb" .deb)
  say "extracting $name"
  build_kernel_from_deb "$deb" "$cache/$name"
  if [ -n "$dl" ]; then rm -rf "$dl"; fi
  echo "$name" >"$cache/current.tmp" && mv "$cache/current.tmp" "$cache/current"
  kernel=$cache/$name/vmlinux
  exec 9>&-
  say "kernel ready in $(elapsed "$t0") s: $kernel"
}

kernel=""
ensure_kernel

# ------------------------------------------------------------- initramfs ----
work=$(mktemp -d "${TMPDIR:-/tmp}/fy-vm.XXXXXX")
cleanup() { if [ "${FY_VM_KEEP:-0}" = 1 ]; then echo "$me: kept $work" >&2; else rm -rf "$work"; fi; }
trap cleanup EXIT
root=$work/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,root,etc,fy,lib64}
chmod 1777 "$root/tmp"
t_initrd=$(now)

is_elf() { [ -f "$1" ] && [ "$(head -c 4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; }

copy_one() { # host-path: copy content (symlinks followed) to the same path in the image
  local src=$1 dst=$root$1
  mkdir -p "$(dirname "$dst")"
  rm -f "$dst"
  cp -L --preserve=mode "$src" "$dst" || die "cannot copy $src into the guest image"
}

declare -A copied=()
add_libs() { # ELF file: add its dynamic loader and the libraries ldd resolves
  local f=$1 interp line lib
  interp=$(readelf -l "$f" 2>/dev/null | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p')
  if [ -n "$interp" ] && [ -z "${copied[$interp]:-}" ]; then copy_one "$interp"; copied[$interp]=1; fi
  readelf -d "$f" 2>/dev/null | grep -q '(NEEDED)' || return 0
  local out
  out=$(ldd "$f" 2>&1) || { echo "$out" >&2; die "ldd $f failed"; }
  while IFS= read -r line; do
    case $line in
      *"not found"*) die "$f: missing library: $line" ;;
      *"=> /"*) lib=${line#*=> }; lib=${lib%% (*} ;;
      [[:space:]]/*) lib=${line#"${line%%[![:space:]]*}"}; lib=${lib%% (*} ;;
      *) continue ;;
    esac
    if [ -z "${copied[$lib]:-}" ]; then copy_one "$lib"; copied[$lib]=1; fi
  done <<<"$out"
  add_dlopened "$f"
}

# Libraries the program dlopen()s by soname (the library loads libarchive,
# libcrypto, libbpf and liblzma on first use, lib/lazy.h): every soname string
# in the file that the host's loader cache resolves, with its own libraries.
add_dlopened() {
  local f=$1 so path
  for so in $(strings -n 6 "$f" | grep -E '^lib[A-Za-z0-9_+-]+\.so\.[0-9][0-9.]*$' | sort -u); do
    path=$(ldconfig -p | awk -v s="$so" '$1 == s && /x86-64/ && !p { p = $NF } END { print p }')
    [ -n "$path" ] || continue
    path=$(readlink -f "$path")
    if [ -z "${copied[$path]:-}" ]; then
      copied[$path]=1
      mkdir -p "$root$(dirname "$path")"
      cp --preserve=mode "$path" "$root$path" || die "cannot copy $path into the guest image"
      # the soname the program asks for, beside the file it names
      [ -e "$root$(dirname "$path")/$so" ] || ln -s "$(basename "$path")" "$root$(dirname "$path")/$so"
      add_libs "$path"
    fi
  done
}

add_path() { # host path (file or dir), with libraries for ELF files
  local p=$1
  [ -e "$p" ] || die "FY_VM_FILES: $p does not exist"
  case $p in /*) ;; *) p=$(cd "$(dirname "$p")" && pwd)/$(basename "$p") ;; esac
  if [ -d "$p" ]; then
    mkdir -p "$root$(dirname "$p")"
    rm -rf "${root:?}$p"
    cp -a "$p" "$root$p"
    local f
    while IFS= read -r -d '' f; do is_elf "$f" && add_libs "$f"; done < <(find "$p" -type f -print0)
  else
    copy_one "$p"
    is_elf "$p" && add_libs "$p"
  fi
  return 0
}

# the guest modules (cached with the kernel; none with FY_VM_KERNEL), in order
kdir=$(dirname "$kernel")
if [ -d "$kdir/modules" ]; then
  mkdir -p "$root/lib/fy-modules"
  for m in "${guest_modules[@]}"; do
    cp "$kdir/modules/$(basename "$m")" "$root/lib/fy-modules/" || die "cannot copy module $m"
    basename "$m" >>"$root/lib/fy-modules/order"
  done
fi

# busybox; /init runs `busybox --install -s`, which leaves alone any path that
# PROGRAM or FY_VM_FILES put in the image (e.g. a real /bin/true).
cp -L "$busybox" "$root/bin/busybox"
is_elf "$busybox" && add_libs "$busybox"   # no-op for busybox-static
ln -s busybox "$root/bin/sh"

# the program under test, at its absolute host path
prog=$1; shift
case $prog in
  */*) [ -e "$prog" ] || die "$prog does not exist" ;;
  *) p=$(type -P "$prog") || die "'$prog' not found in PATH"; prog=$p ;;
esac
prog=$(cd "$(dirname "$prog")" && pwd)/$(basename "$prog")
[ -x "$prog" ] || die "$prog is not executable"
add_path "$prog"
for f in ${FY_VM_FILES:-}; do add_path "$f"; done

# /init and its inputs
cp "$here/guest-init.sh" "$root/init"
chmod 755 "$root/init"
sq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
{
  printf 'set --'
  printf ' %s' "$(sq "$prog")"
  for a in "$@"; do printf ' %s' "$(sq "$a")"; done
  printf '\n'
} >"$root/fy/argv"
{
  names=" ${FY_VM_ENV:-} ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS MALLOC_PERTURB_ $(compgen -e | grep '^CK_' | tr '\n' ' ' || true)"
  for n in $names; do
    [[ $n =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "FY_VM_ENV: bad variable name '$n'"
    if [ -n "${!n+set}" ]; then printf 'export %s=%s\n' "$n" "$(sq "${!n}")"; fi
  done
} >"$root/fy/env"
nonce=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
echo "$nonce" >"$root/fy/nonce"
pwd >"$root/fy/cwd"
[ "${FY_VM_VERBOSE:-0}" = 1 ] && : >"$root/fy/verbose"
mkdir -p "$root$(pwd)"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' >"$root/etc/hosts"

# uncompressed newc: the cheapest for the guest kernel to unpack under TCG
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$work/initrd.cpio" ||
  die "cpio failed"
say "initramfs: $(du -h "$work/initrd.cpio" | cut -f1) in $(elapsed "$t_initrd") s"

# ------------------------------------------------------------------ boot ----
# Timekeeping under TCG: the guest's TSC is the host's TSC, but the kernel's
# PIT calibration of it usually fails under TCG ("tsc: Unable to calibrate
# against PIT ... could not calculate TSC khz"), and then boot hangs before
# the console driver (QEMU 7.2 + Debian 6.1 guest: most runs on the 2-vCPU
# builders, with or without pit=on). Tell it the frequency instead.
# Where the host knows its TSC frequency exactly (tsc_known_freq, no APERF/MPERF
# so "cpu MHz" is that frequency), also trust the TSC as clocksource: high
# resolution timers and vDSO clock_gettime in the guest. Otherwise the guest
# falls back to the jiffies clocksource (right rate, 4 ms resolution).
tsc_args=""
if [ -n "${FY_VM_TSC_KHZ:-}" ]; then
  tsc_args="tsc_early_khz=$FY_VM_TSC_KHZ"
else
  mhz=$(sed -n 's/^cpu MHz[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1)
  flags=" $(sed -n 's/^flags[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1) "
  khz=$(awk -v m="${mhz:-0}" 'BEGIN { printf "%d", m * 1000 + 0.5 }')
  [ "$khz" -gt 100000 ] || khz=2000000
  tsc_args="tsc_early_khz=$khz"
  case $flags in
    *" aperfmperf "*) ;;
    *" constant_tsc "*) case $flags in *" nonstop_tsc "*) case $flags in *" tsc_known_freq "*)
      tsc_args="$tsc_args tsc=reliable" ;; esac ;; esac ;;
  esac
fi
# cryptomgr.notests: skip the crypto self-tests (~0.8 s of guest boot under TCG).
cmdline="console=ttyS0 quiet loglevel=1 panic=-1 reboot=t rdinit=/init $tsc_args cryptomgr.notests ${FY_VM_APPEND:-}"
# shellcheck disable=SC2054  # commas are QEMU's, inside single arguments
qemu_args=(
  -M microvm,acpi=on -accel tcg
  -m "${FY_VM_MEMORY:-1024M}" -smp "${FY_VM_SMP:-2}"
  -nodefaults -no-user-config -nographic -no-reboot
  -kernel "$kernel" -initrd "$work/initrd.cpio" -append "$cmdline"
  -chardev stdio,id=con0,signal=off -serial chardev:con0
)
say "booting: $qemu ${qemu_args[*]}"
# A guest that prints nothing at all within the boot limit (not even /init's
# first line, FY-GUEST-UP) is stuck before its console (the TCG hang above,
# still seen about once in a hundred boots under load): it is killed and
# booted again, once. What it would have run has not started, so the retry
# changes no result; the harness says so on stderr.
boot_limit=${FY_VM_BOOT_TIMEOUT:-120}
((boot_limit < timeout_s)) || boot_limit=$timeout_s
boot() {
  : >"$work/console.log"
  timeout --foreground -k 5 "$timeout_s" "$qemu" "${qemu_args[@]}" </dev/null 2>"$work/qemu.err" >"$work/console.log" &
  local qpid=$! t0 booted=0
  tail -n +1 -f --pid="$qpid" "$work/console.log" &
  local tpid=$!
  t0=$(date +%s)
  silent=0
  while kill -0 "$qpid" 2>/dev/null; do
    if [ "$booted" = 0 ]; then
      if grep -aq "FY-GUEST-UP" "$work/console.log"; then
        booted=1
      elif (($(date +%s) - t0 >= boot_limit)); then
        silent=1
        kill -TERM "$qpid" 2>/dev/null || true
        break
      fi
    fi
    sleep 0.5
  done
  wait "$qpid"
  qrc=$?
  wait "$tpid" || true
}
t_boot=$(now)
set +e
boot
if [ "$silent" = 1 ]; then
  echo "$me: the guest printed nothing within $boot_limit s (stuck before its console); booting it again, once" >&2
  [ -s "$work/qemu.err" ] && sed "s/^/$me: qemu (first boot): /" "$work/qemu.err" >&2
  t_boot=$(now)
  boot
fi
# A guest that came up but never finished and reported nothing is killed
# at the limit and booted again, once. Seen under TCG on the loaded 2-CPU
# builders (2026-12-04, twice in a day): a guest stalled for 300 s in the
# middle of a plain cgroup self test that takes seconds, or of the library's
# guest suite, which passed in 17-20 s on every other run. Each boot is a
# fresh guest from the same initramfs, so the retry runs the same program
# on the same input; one that hangs every time still fails (in twice the
# time), and the harness says so on stderr. FY_VM_NO_RETRY=1: never.
if [ "$silent" = 0 ] && { [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; } && [ -z "${FY_VM_NO_RETRY:-}" ] &&
  ! tr -d '\r' <"$work/console.log" | grep -aq "FY-GUEST-EXIT=[0-9]* run=$nonce"; then
  echo "$me: the guest did not finish within $timeout_s s and reported nothing; booting it again, once" >&2
  [ -s "$work/qemu.err" ] && sed "s/^/$me: qemu (first boot): /" "$work/qemu.err" >&2
  t_boot=$(now)
  boot
fi
set -e
say "qemu exit $qrc after $(elapsed "$t_boot") s (total $(elapsed "$t_start") s)"
[ -s "$work/qemu.err" ] && sed "s/^/$me: qemu: /" "$work/qemu.err" >&2
if [ "$silent" = 1 ]; then
  echo "$me: the guest printed nothing within $boot_limit s, twice; QEMU was killed" >&2
  exit 125
fi

rc=$(tr -d '\r' <"$work/console.log" | sed -n "s/.*FY-GUEST-EXIT=\([0-9][0-9]*\) run=$nonce.*/\1/p" | tail -1)
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
  echo "$me: TIMEOUT: the guest did not finish within $timeout_s s; QEMU was killed" >&2
  [ -n "$rc" ] && echo "$me: (the program had reported exit status $rc before the guest hung)" >&2
  exit 125
fi
if [ -z "$rc" ]; then
  if grep -aq "FY-GUEST-SETUP-FAILED" "$work/console.log"; then
    echo "$me: guest setup failed (see the console output above)" >&2
  else
    echo "$me: the guest reported no exit status (qemu exit $qrc; kernel panic or crash? see the console output above)" >&2
  fi
  exit 125
fi
[ "$qrc" -eq 0 ] || echo "$me: warning: qemu exited with $qrc after the program reported $rc" >&2
exit "$rc"

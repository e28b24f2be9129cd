#!/usr/bin/env bash
# Installs the Debian 12 packages the build, the tests and the demo need,
# only those that are missing. Needs root (or sudo) when something is missing.
set -euo pipefail

pkgs=(
  gcc g++ clang libclang-rt-14-dev pkg-config meson ninja-build python3
  libseccomp-dev libcap-dev libarchive-dev libsodium-dev libjansson-dev
  check abigail-tools mandoc util-linux iproute2 cppcheck bubblewrap
  libbpf-dev  # device leasing on cgroup v2: the device program (lib/linux/linux-devices.c)
  acl  # test/linux action: setfacl makes the POSIX ACLs the input walk judges (lib/action-tree.c)
  nftables  # only the tests: they list the routers' and jobs' tables with nft (the library needs no nft)
  passt  # network mode restricted without root: pasta, the router namespace's uplink (lib/linux/linux-net-user.c)
  curl  # test/net: the fetch-only workload (through the proxy) and fy-bench's direct peer
  qemu-system-x86 busybox-static cpio binutils xz-utils
  linux-image-amd64 liblzma-dev  # the VM backend's guest kernel (lib/vm), its vmlinux extraction
  python3-pytest  # the Python binding's tests (bindings/python)
  libacl1-dev libzstd-dev liblz4-dev  # libarchive's static dependencies (the static-link test)
  libssl-dev  # libcrypto: bulk SHA-256 with the CPU's SHA extensions (lib/digest.c)
  runc  # fy-bench's OCI peer, and the oci-runc adapter (test/oci runtime)
  crun  # test/oci runtime: the probe's crun verdict checked against crun itself
  umoci zstd  # test/oci: the independent image producer, zstd layers
  gcc-mingw-w64-x86-64 wine64  # the Windows cross build and its tests under Wine (test/windows)
  bazel-bootstrap bazel-rules-java  # test/integrations/test-bazel.sh: the real Bazel runs its tests under forgeyard wrap
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

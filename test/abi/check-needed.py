#!/usr/bin/env python3
# The shared library's DT_NEEDED entries: the libraries loaded on first use
# (lib/lazy.h) must not be among them, or every process that links the library
# pays for mapping and relocating them (and libxml2, ICU, libstdc++ behind
# libarchive) at start.
import subprocess, sys

readelf, lib = sys.argv[1], sys.argv[2]
lazy = ("libarchive.so", "libcrypto.so", "libbpf.so", "liblzma.so", "libxml2.so", "libicuuc.so", "libstdc++.so")
out = subprocess.run([readelf, "-d", lib], check=True, capture_output=True, text=True).stdout
needed = [l.split("[", 1)[1].split("]", 1)[0] for l in out.splitlines() if "(NEEDED)" in l]
bad = [n for n in needed if n.startswith(lazy)]
print("NEEDED:", " ".join(needed))
if bad:
    print("FAIL: loaded at start instead of on first use:", " ".join(bad))
    sys.exit(1)

#!/bin/sh
# Runs inside the sandbox: compile from the read-only source into the
# writable build directory, then publish the binary as the output.
set -eu
cc -O2 -Wall -o /work/build/hello /work/source/hello.c
cp /work/build/hello /work/output/hello
/work/output/hello
cat /proc/net/dev | tail -n +3 | cut -d: -f1

#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Build libforgeyard-sandbox.a whose only global definitions are the exports.

An archive of the internal objects would define every internal global
(strbuf_init, vec_push, err_set, util_asprintf...) in the host program's
namespace, and a host with a function of the same name (git has its own
strbuf_init) would fail to link. So, like the shared library's version
script, the static library keeps only the names the version script exports:

  1. partially link all internal objects into one relocatable object
     (CC -r -nostdlib, the whole internal archive): references between
     internal objects are resolved here, once;
  2. objcopy --keep-global-symbols=<the global: names of the .sym file>
     makes every other defined global a local symbol; undefined references
     (libc, jansson, libsodium, libseccomp) stay undefined globals;
  3. ar the single object into the output archive.

Usage: make-static.py SYM INTERNAL_ARCHIVE OUTPUT OBJCOPY AR -- CC [ARGS...]
"""
import os
import re
import subprocess
import sys
import tempfile


def exported_names(sym_path):
    """The names listed under global: in a GNU version script."""
    with open(sym_path, encoding='utf-8') as f:
        text = re.sub(r'/\*.*?\*/', ' ', f.read(), flags=re.S)
    names, scope = set(), None
    for m in re.finditer(r'\b(global|local)\s*:|\b([A-Za-z_][A-Za-z0-9_]*)\s*;|\}', text):
        if m.group(1):
            scope = m.group(1)
        elif m.group(0) == '}':
            scope = None  # end of a version node
        elif scope == 'global':
            names.add(m.group(2))
    return sorted(names)


def main(argv):
    if '--' not in argv or argv.index('--') != 5 or len(argv) < 7:
        sys.stderr.write(__doc__)
        return 2
    sym, internal, output, objcopy, ar = argv[:5]
    cc = argv[6:]
    names = exported_names(sym)
    if not names:
        sys.stderr.write('make-static: no global: names in %s\n' % sym)
        return 1
    with tempfile.TemporaryDirectory(prefix='fy-static.', dir=os.path.dirname(output) or '.') as tmp:
        keep = os.path.join(tmp, 'keep.txt')
        with open(keep, 'w', encoding='utf-8') as f:
            f.write(''.join(n + '\n' for n in names))
        joined = os.path.join(tmp, 'joined.o')
        obj = os.path.join(tmp, 'forgeyard-sandbox.o')
        subprocess.run(cc + ['-r', '-nostdlib', '-o', joined, '-Wl,--whole-archive',
                             os.path.abspath(internal), '-Wl,--no-whole-archive'], check=True)
        subprocess.run([objcopy, '--keep-global-symbols=' + keep, joined, obj], check=True)
        if os.path.exists(output):
            os.unlink(output)
        subprocess.run([ar, 'rcsD', output, obj], check=True)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

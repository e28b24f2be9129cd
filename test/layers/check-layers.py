#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The dependency rule, checked on the #include edges of lib/ and test/fake/.

    api -> core -> backend.h <- lib/<backend>/

- Core (lib/*.c, lib/*.h) includes no header of a backend folder or of
  lib/sys/ (it names no backend; the generated table is its only link).
- A backend folder (lib/<name>/ with a <name>-backend.c) includes its own
  headers, lib/sys/<os>/ headers, the public headers, and of core only the
  seam: backend.h, internal.h and lazy.h (utilities), caps.h (what a probe
  fills), handle.h and attempt.h (the running attempt and its report). Never
  another backend folder's headers.
- A service folder (lib/oci/: the image service; no <name>-backend.c, no
  ops) is core's helper, not a backend: core may include its one public
  header (oci/oci.h), backend folders may not; the service folder itself
  includes only internal.h and lazy.h, the public headers, lib/sys/<os>/ headers and
  its own headers.
- The fake backend of the unit tests (test/fake/) includes backend.h only.

Edges that break the rule today and are being removed (issue 20's neutral
plan) are listed in DEBTS: each must still exist (so the list only shrinks)
and no other may appear.

    check-layers.py SOURCE_ROOT
"""
import os
import re
import sys

SEAM = {'backend.h', 'internal.h', 'lazy.h', 'caps.h', 'handle.h', 'attempt.h'}
# Service folders and the one header of each that core may include.
SERVICES = {'oci': 'oci.h'}
# (file, header): none left. (The qualification suite, which drives whole
# attempts through the public API as a host program would, reaches what it
# needs of a policy beyond that API through backend.h's qualify_* hooks.)
DEBTS = set()
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A backend reads the platform-neutral plan (plan.h), never the policy or
# the prepared object's innards (the qualification suite, a client of the
# public API that builds policies, excepted).
FORBIDDEN_USE = re.compile(r'->policy\b|\bstruct\s+(pol_\w+|prep_secret)\b|\bVEC_EACH\b|->env\b|->secrets\b.*decl'
                           r'|\bpolicy_[a-z_]+\(|->origin_pid\b')
USE_EXEMPT = set()


def includes(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return INCLUDE.findall(f.read())


def main():
    root = sys.argv[1]
    lib = os.path.join(root, 'lib')
    core_headers = {f for f in os.listdir(lib) if f.endswith('.h')}
    backends = sorted(d for d in os.listdir(lib)
                      if os.path.isdir(os.path.join(lib, d)) and d != 'sys'
                      and os.path.exists(os.path.join(lib, d, d + '-backend.c')))
    folder_headers = {}
    for d in os.listdir(lib):
        full = os.path.join(lib, d)
        if os.path.isdir(full):
            for dirpath, _, files in os.walk(full):
                for f in files:
                    if f.endswith('.h'):
                        folder_headers[f] = os.path.relpath(dirpath, lib)
    problems, seen_debts = [], set()

    def rel(p):
        return os.path.relpath(p, root)

    # Core.
    for f in sorted(os.listdir(lib)):
        if not f.endswith(('.c', '.h')):
            continue
        for h in includes(os.path.join(lib, f)):
            base = os.path.basename(h)
            if any(h == '%s/%s' % (d, hd) for d, hd in SERVICES.items()):
                continue
            if '/' in h and not h.startswith('forgeyard/'):
                problems.append('lib/%s includes "%s": core includes no backend or sys header' % (f, h))
            elif base in folder_headers and base not in core_headers:
                problems.append('lib/%s includes %s (lib/%s/): core names no backend'
                                % (f, h, folder_headers[base]))
    # Backend folders.
    for b in backends:
        own = os.path.join('lib', b)
        for dirpath, _, files in os.walk(os.path.join(lib, b)):
            for f in sorted(files):
                if not f.endswith(('.c', '.h')):
                    continue
                path = os.path.join(dirpath, f)
                if rel(path) not in USE_EXEMPT:
                    with open(path, encoding='utf-8', errors='replace') as src:
                        for n, line in enumerate(src, 1):
                            m = FORBIDDEN_USE.search(line)
                            if m:
                                problems.append('%s:%d uses %s: a backend reads the neutral plan (plan.h), not the '
                                                'policy' % (rel(path), n, m.group(0)))
                for h in includes(path):
                    base = os.path.basename(h)
                    where = folder_headers.get(base)
                    if h.startswith('forgeyard/') or base.startswith('fy-'):
                        continue
                    if where and (where == os.path.relpath(os.path.join(lib, b), lib) or where.startswith('sys' + os.sep)
                                  or where.startswith(b + os.sep)):
                        continue
                    if where:
                        problems.append('%s includes %s of lib/%s/: a backend uses no other backend\'s headers'
                                        % (rel(path), h, where))
                        continue
                    if base in SEAM:
                        continue
                    if (rel(path), base) in DEBTS:
                        seen_debts.add((rel(path), base))
                        continue
                    if base in core_headers:
                        problems.append('%s includes %s: a backend reaches core only through %s'
                                        % (rel(path), h, ', '.join(sorted(SEAM))))
                    else:
                        problems.append('%s includes "%s", which is not in the tree' % (rel(path), h))
    # Service folders.
    for svc in sorted(SERVICES):
        sdir = os.path.join(lib, svc)
        if not os.path.isdir(sdir):
            continue
        if os.path.exists(os.path.join(sdir, svc + '-backend.c')):
            problems.append('lib/%s/ is a service folder: it has no %s-backend.c' % (svc, svc))
        for f in sorted(os.listdir(sdir)):
            if not f.endswith(('.c', '.h')):
                continue
            for h in includes(os.path.join(sdir, f)):
                base = os.path.basename(h)
                where = folder_headers.get(base)
                if h.startswith('forgeyard/') or base in ('internal.h', 'lazy.h'):
                    continue
                if where and (where == svc or where.startswith('sys' + os.sep)):
                    continue
                problems.append('lib/%s/%s includes %s: a service folder uses internal.h, lazy.h, the public headers, '
                                'lib/sys/ and its own headers only' % (svc, f, h))
    # The fake backend.
    fake = os.path.join(root, 'test', 'fake')
    for f in sorted(os.listdir(fake)):
        if f.endswith(('.c', '.h')):
            for h in includes(os.path.join(fake, f)):
                if h != 'backend.h' and not os.path.exists(os.path.join(fake, h)):
                    problems.append('test/fake/%s includes %s: the fake backend uses backend.h only' % (f, h))
    for d in sorted(DEBTS - seen_debts):
        problems.append('%s no longer includes %s: remove it from DEBTS in %s' % (d[0], d[1], rel(__file__)))
    if not backends:
        problems.append('no backend folder found under lib/ (lib/<name>/<name>-backend.c)')
    for p in problems:
        print('FAIL: ' + p)
    print('%d backend folder(s) (%s), %d known debt(s): %s'
          % (len(backends), ', '.join(backends), len(DEBTS), 'ok' if not problems else 'FAILED'))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())

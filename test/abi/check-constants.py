#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Numbers are forever: check every FY_* numeric constant against constants.txt.

abidiff cannot see a renumbered #define (or an enumerator of a type that no
exported signature uses), so this test pins the values. It asks the C
preprocessor for every object-like FY_* macro the public headers define,
compiles a program that prints their values, and compares with the file:

  - a value that differs from constants.txt fails ("renumbered");
  - a constant in constants.txt that the headers no longer define fails;
  - a constant the headers define but constants.txt lacks fails
    ("add it to constants.txt").

constants.txt holds "NAME VALUE" lines; "NAME *" marks a constant whose
value is allowed to change (the version numbers, FY_*_MAX_ sentinels).
Lines starting with # are comments.

Usage: CC=... check-constants.py CONSTANTS_TXT HEADER...
       CC=... check-constants.py --generate CONSTANTS_TXT HEADER...
(--generate prints a complete file on stdout, keeping the "*" entries.)
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

NUMERIC_BODY = re.compile(r'^[\sA-Za-z0-9_(),<>|&~+\-*/^]+$')


def read_constants(path):
    pinned, free, problems = {}, set(), []
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2 or not parts[0].startswith('FY_'):
                problems.append('%s:%d: expected "FY_NAME VALUE" or "FY_NAME *"' % (path, n))
                continue
            name, value = parts
            if name in pinned or name in free:
                problems.append('%s:%d: %s listed twice' % (path, n, name))
            if value == '*':
                free.add(name)
            else:
                try:
                    pinned[name] = int(value, 0)
                except ValueError:
                    problems.append('%s:%d: %s: value %r is not an integer' % (path, n, name, value))
    return pinned, free, problems


def header_constants(cc, headers):
    tmp = tempfile.mkdtemp(prefix='fy-constants.')
    try:
        inc = os.path.join(tmp, 'forgeyard')
        os.mkdir(inc)
        names = []
        for h in headers:
            shutil.copy(h, inc)
            names.append(os.path.basename(h))
        src = os.path.join(tmp, 'all.c')
        with open(src, 'w') as f:
            f.write(''.join('#include <forgeyard/%s>\n' % n for n in sorted(names)))
        macros = subprocess.run(cc + ['-dM', '-E', '-I', tmp, src], check=True,
                                capture_output=True, text=True).stdout
        cands = []
        for line in macros.splitlines():
            m = re.match(r'^#define (FY_[A-Za-z0-9_]*)(\(?)(.*)$', line)
            if not m or m.group(2) == '(':
                continue  # not ours, or function-like
            name, body = m.group(1), m.group(3).strip()
            if not body or '"' in body or "'" in body or '__attribute__' in body \
                    or '__declspec' in body or not NUMERIC_BODY.match(body):
                continue  # empty, string, or an attribute/linkage macro
            cands.append(name)
        cands.sort()
        prog = os.path.join(tmp, 'print.c')
        with open(prog, 'w') as f:
            f.write('#include <stdio.h>\n')
            f.write(''.join('#include <forgeyard/%s>\n' % n for n in sorted(names)))
            f.write('#define P(n) do { if ((n) < 0) printf("%s %lld\\n", #n, (long long)(n)); '
                    'else printf("%s %llu\\n", #n, (unsigned long long)(n)); } while (0)\n')
            f.write('int main(void) {\n')
            f.write(''.join('    P(%s);\n' % n for n in cands))
            f.write('    return 0;\n}\n')
        exe = os.path.join(tmp, 'print')
        subprocess.run(cc + ['-w', '-I', tmp, prog, '-o', exe], check=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
        values = {}
        for line in out.splitlines():
            name, value = line.split()
            values[name] = int(value)
        return values
    finally:
        shutil.rmtree(tmp)


def main(argv):
    generate = False
    if argv and argv[0] == '--generate':
        generate = True
        argv = argv[1:]
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    cc = shlex.split(os.environ.get('CC', 'cc'))
    path, headers = argv[0], argv[1:]
    pinned, free, problems = read_constants(path) if os.path.exists(path) else ({}, set(), [])
    actual = header_constants(cc, headers)

    if generate:
        # Keep the existing comment block; the generator is a convenience for
        # adding lines, never for changing values.
        if os.path.exists(path):
            with open(path, encoding='utf-8') as f:
                for line in f:
                    if not line.startswith('#'):
                        break
                    sys.stdout.write(line)
        for name in sorted(actual):
            print('%s %s' % (name, '*' if name in free else actual[name]))
        return 0

    for name in sorted(actual):
        if name in free:
            continue
        if name not in pinned:
            problems.append('%s = %d is not in constants.txt: add it to constants.txt '
                            '(test/abi/constants.txt; its value is then fixed forever)'
                            % (name, actual[name]))
        elif pinned[name] != actual[name]:
            problems.append('%s was renumbered: constants.txt says %d, the headers say %d. '
                            'FY_* values are never renumbered or reused; add a new constant instead'
                            % (name, pinned[name], actual[name]))
    for name in sorted(set(pinned) | free):
        if name not in actual:
            problems.append('%s is in constants.txt but no longer defined by the public headers: '
                            'constants are never removed (keep it, deprecated, until a SONAME bump)'
                            % name)
    if problems:
        sys.stderr.write('check-constants: FAILED\n' + ''.join('  - %s\n' % p for p in problems))
        return 1
    print('check-constants: %d constants match %s (%d not pinned)'
          % (len(actual) - len(free & set(actual)), os.path.basename(path), len(free & set(actual))))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

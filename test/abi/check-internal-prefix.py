#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The public fy_ prefix is for exports only: every global symbol the
library's objects define whose name starts with fy_ is in the version script.

    check-internal-prefix.py NM ARCHIVE SYM
"""
import re
import subprocess
import sys

nm, archive, sym = sys.argv[1:4]
exported = set(re.findall(r'^\s*(fy_[A-Za-z0-9_]+);', open(sym).read(), re.M))
out = subprocess.run([nm, '-g', '--defined-only', archive], capture_output=True, text=True, check=True).stdout
defined = {line.split()[-1] for line in out.splitlines() if len(line.split()) == 3}
bad = sorted(s for s in defined if s.startswith('fy_') and s not in exported)
for s in bad:
    print('FAIL: %s is a global with the public prefix but not an export (give it its module\'s prefix)' % s)
print('%d exports, %d internal globals with the fy_ prefix' % (len(exported), len(bad)))
sys.exit(1 if bad else 0)

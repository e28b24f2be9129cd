#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The installed constants.json agrees with test/abi/constants.txt.

Bindings read <datadir>/forgeyard-sandbox/constants.json (generated at build
time by lib/gen-constants.py) instead of copying the #defines. This checks
it name by name against constants.txt, whose values check-constants.py takes
from the compiler:

  - every constant of constants.txt is in the JSON, with the same value
    for the pinned ones;
  - the JSON has no name that constants.txt lacks;
  - the "*" entries are integers, and the version numbers are the project's.

Usage: check-constants-json.py CONSTANTS_JSON CONSTANTS_TXT PROJECT_VERSION
"""
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module  # noqa: E402

read_constants = import_module('check-constants').read_constants


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    json_path, txt_path, version = argv
    with open(json_path, encoding='utf-8') as f:
        data = json.load(f)
    pinned, free, problems = read_constants(txt_path)
    if not isinstance(data, dict):
        problems.append('%s is not a JSON object' % json_path)
        data = {}
    for name, value in sorted(data.items()):
        if not isinstance(value, int) or isinstance(value, bool):
            problems.append('%s: %r is not an integer' % (name, value))
        if name not in pinned and name not in free:
            problems.append('%s is in the JSON but not in constants.txt' % name)
    for name, value in sorted(pinned.items()):
        if name not in data:
            problems.append('%s (%d) is missing from the JSON' % (name, value))
        elif data[name] != value:
            problems.append('%s is %r in the JSON, %d in constants.txt' % (name, data[name], value))
    for name in sorted(free):
        if name not in data:
            problems.append('%s is missing from the JSON' % name)
    major, minor, micro = (int(x) for x in version.split('.')[:3])
    expect = {'FY_VERSION_MAJOR': major, 'FY_VERSION_MINOR': minor, 'FY_VERSION_MICRO': micro,
              'FY_VERSION': major * 65536 + minor * 256 + micro}
    for name, value in sorted(expect.items()):
        if name in data and data[name] != value:
            problems.append('%s is %r in the JSON, the project version %s says %d'
                            % (name, data[name], version, value))
    if problems:
        sys.stderr.write('check-constants-json: FAILED\n' + ''.join('  - %s\n' % p for p in problems))
        return 1
    print('check-constants-json: %d constants in %s agree with %s'
          % (len(data), os.path.basename(json_path), os.path.basename(txt_path)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

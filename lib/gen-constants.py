#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Write every FY_* integer constant of the public headers as a JSON object.

Bindings (Python, Go, Rust, ...) read the installed constants.json instead of
copying ~200 #defines by hand:  {"FY_E_INVALID": -2, "FY_LEVEL_NONE": 0, ...}

The constants are the object-like FY_* macros whose bodies are integer
expressions (the same selection as test/abi/check-constants.py). The C
preprocessor expands each one; the expansion (literals with u/l suffixes,
parentheses, + - * / % << >> & | ^ and unary + -) is evaluated here, so
nothing is compiled or run for the host and cross builds work. An expression
outside that grammar (a cast, ~, a sizeof) is an error: extend this script.
test/abi/check-constants-json.py compares the result with the values the
compiler gives (test/abi/constants.txt).

Usage: gen-constants.py OUTPUT HEADER... -- CC [ARGS...]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

NUMERIC_BODY = re.compile(r'^[\sA-Za-z0-9_(),<>|&~+\-*/^]+$')
TOKEN = re.compile(r'\s*(?:(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)([uUlL]*)|(<<|>>|[-+*/%&|^()~!]))')


class ExprError(Exception):
    pass


def tokenize(expr):
    toks, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise ExprError('cannot evaluate %r (at %r)' % (expr, expr[pos:]))
        if m.group(1):
            toks.append(('num', int(m.group(1), 0) if not re.fullmatch(r'0[0-7]+', m.group(1))
                         else int(m.group(1), 8)))
        else:
            toks.append(('op', m.group(3)))
        pos = m.end()
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
    return toks


def evaluate(expr):
    """C integer constant expression without casts or ~ (see the docstring)."""
    toks = tokenize(expr)
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else (None, None)

    def take():
        t = peek()
        pos[0] += 1
        return t

    def primary():
        kind, val = take()
        if kind == 'num':
            return val
        if val == '(':
            v = binary(0)
            if take() != ('op', ')'):
                raise ExprError('unbalanced parentheses in %r' % expr)
            return v
        if val in ('+', '-'):
            v = primary()
            return -v if val == '-' else v
        raise ExprError('cannot evaluate %r (unsupported %r)' % (expr, val))

    levels = [('|',), ('^',), ('&',), ('<<', '>>'), ('+', '-'), ('*', '/', '%')]

    def binary(level):
        if level == len(levels):
            return primary()
        v = binary(level + 1)
        while peek()[0] == 'op' and peek()[1] in levels[level]:
            op = take()[1]
            r = binary(level + 1)
            if op == '|':
                v |= r
            elif op == '^':
                v ^= r
            elif op == '&':
                v &= r
            elif op == '<<':
                v <<= r
            elif op == '>>':
                v >>= r
            elif op == '+':
                v += r
            elif op == '-':
                v -= r
            elif op == '*':
                v *= r
            elif r == 0:
                raise ExprError('division by zero in %r' % expr)
            else:  # C division truncates toward zero
                q = abs(v) // abs(r) * (1 if (v < 0) == (r < 0) else -1)
                v = q if op == '/' else v - q * r
        return v

    v = binary(0)
    if pos[0] != len(toks):
        raise ExprError('cannot evaluate %r' % expr)
    if not -(1 << 63) <= v < (1 << 64):
        raise ExprError('%r does not fit in 64 bits' % expr)
    return v


def header_constants(cc, headers):
    tmp = tempfile.mkdtemp(prefix='fy-constants.')
    try:
        inc = os.path.join(tmp, 'forgeyard')
        os.mkdir(inc)
        names = []
        for h in headers:
            shutil.copy(h, inc)
            names.append(os.path.basename(h))
        includes = ''.join('#include <forgeyard/%s>\n' % n for n in sorted(names))
        src = os.path.join(tmp, 'all.c')
        with open(src, 'w') as f:
            f.write(includes)
        macros = subprocess.run(cc + ['-dM', '-E', '-I', tmp, src], check=True,
                                capture_output=True, text=True).stdout
        cands = []
        for line in macros.splitlines():
            m = re.match(r'^#define (FY_[A-Za-z0-9_]*)(\(?)(.*)$', line)
            if not m or m.group(2) == '(':
                continue  # not ours, or function-like
            body = m.group(3).strip()
            if not body or '"' in body or "'" in body or '__attribute__' in body \
                    or '__declspec' in body or not NUMERIC_BODY.match(body):
                continue  # empty, string, or an attribute/linkage macro
            cands.append(m.group(1))
        # The string literal keeps the name from being expanded.
        with open(src, 'w') as f:
            f.write(includes)
            f.write(''.join('"%s" = %s ;\n' % (n, n) for n in sorted(cands)))
        out = subprocess.run(cc + ['-E', '-P', '-I', tmp, src], check=True,
                             capture_output=True, text=True).stdout
        values = {}
        for m in re.finditer(r'^"(FY_[A-Za-z0-9_]*)" = (.*?) ;$', out, flags=re.M):
            values[m.group(1)] = evaluate(m.group(2))
        missing = sorted(set(cands) - set(values))
        if missing:
            raise ExprError('no expansion found for ' + ', '.join(missing))
        return values
    finally:
        shutil.rmtree(tmp)


def main(argv):
    if '--' not in argv or argv.index('--') < 2 or argv.index('--') == len(argv) - 1:
        sys.stderr.write(__doc__)
        return 2
    sep = argv.index('--')
    output, headers, cc = argv[0], argv[1:sep], argv[sep + 1:]
    try:
        values = header_constants(cc, headers)
    except ExprError as e:
        sys.stderr.write('gen-constants: %s\n' % e)
        return 1
    with open(output + '.tmp', 'w', encoding='utf-8') as f:
        json.dump(values, f, indent=1, sort_keys=True)
        f.write('\n')
    os.replace(output + '.tmp', output)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

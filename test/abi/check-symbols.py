#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Assert that the exported API is listed identically in four places:

  (a) FY_API function declarations in the public headers,
  (b) the global entries of the linker version script (lib/forgeyard-sandbox.sym),
  (c) the dynamic symbol table of the built shared library (nm -D --defined-only),
  (d) the section 3 man pages (man/<function>.3, a real page or a .so alias).

Also: every exported dynamic symbol starts with fy_, is a function (type T)
and carries a FORGEYARD_SANDBOX_* default version (@@) matching its .sym node;
every function prototype in a public header carries FY_API; every alias page
is a single ".so man3/<real>.3" line whose target is a real page.

Usage: check-symbols.py --header-dir DIR | --headers H... --sym FILE --lib SO --man-dir DIR [--nm NM]
Exit status: 0 when everything agrees, 1 otherwise (with a diff on stderr).
"""
import argparse
import os
import re
import subprocess
import sys

NODE_RE = re.compile(r'^FORGEYARD_SANDBOX_[0-9]+\.[0-9]+$')
IDENT = r'[A-Za-z_][A-Za-z0-9_]*'


def strip_c(text):
    """Remove comments, string literals and preprocessor lines (with continuations)."""
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    out, cont = [], False
    for line in text.split('\n'):
        if cont or line.lstrip().startswith('#'):
            cont = line.rstrip().endswith('\\')
            continue
        out.append(line)
    return '\n'.join(out)


def header_functions(paths, problems):
    """(a): names declared with FY_API; also flags prototypes without FY_API."""
    found = {}
    for path in paths:
        with open(path, encoding='utf-8') as f:
            code = strip_c(f.read())
        # Split into top-level declarations (the headers have no bodies
        # outside preprocessor lines, but be tolerant of braces).
        for stmt in re.split(r'[;{}]', code):
            stmt = ' '.join(stmt.split())
            stmt = re.sub(r'^(?:FY_BEGIN_DECLS|FY_END_DECLS)\s*', '', stmt)
            if '(' not in stmt or stmt.startswith('typedef') or not stmt:
                continue
            names = [n for n in re.findall(r'(' + IDENT + r')\s*\(', stmt)
                     if not re.match(r'^(?:[A-Z][A-Z0-9_]*|__attribute__|__declspec)$', n)]
            if not names:
                continue
            stmt_nodecls = stmt.replace('FY_BEGIN_DECLS', '').replace('FY_END_DECLS', '').strip()
            name = names[0]
            if re.search(r'\bFY_API\b', stmt_nodecls):
                if name in found:
                    problems.append('%s: %s declared twice (also in %s)' % (path, name, found[name]))
                found[name] = os.path.basename(path)
            elif re.match(r'^(?:(?:const|unsigned|signed|struct|extern|static|inline)\s+)*'
                          + IDENT + r'[\s\*]+' + re.escape(name) + r'\s*\(', stmt_nodecls):
                if not stmt_nodecls.startswith('static'):
                    problems.append('%s: function %s is declared without FY_API' % (path, name))
    return found


def sym_entries(path, problems):
    """(b): {name: node} of the global entries of the version script."""
    with open(path, encoding='utf-8') as f:
        text = re.sub(r'/\*.*?\*/', ' ', f.read(), flags=re.S)
    text = re.sub(r'#[^\n]*', ' ', text)
    entries = {}
    for m in re.finditer(r'(' + r'[A-Za-z0-9_.]+' + r')\s*\{(.*?)\}\s*([A-Za-z0-9_.]*)\s*;', text, flags=re.S):
        node, body = m.group(1), m.group(2)
        if not NODE_RE.match(node):
            problems.append('%s: version node %s does not match FORGEYARD_SANDBOX_<major>.<minor>' % (path, node))
        section = None
        for tok in re.findall(r'[^\s;]+:|[^\s;]+', body):
            if tok.endswith(':'):
                section = tok[:-1]
                continue
            if section != 'global':
                continue
            if tok in entries:
                problems.append('%s: %s listed twice (%s and %s)' % (path, tok, entries[tok], node))
            if '*' in tok or '?' in tok:
                problems.append('%s: wildcard %s in global section of %s' % (path, tok, node))
            entries[tok] = node
    if not entries:
        problems.append('%s: no global entries found' % path)
    return entries


def library_exports(nm, lib, problems):
    """(c): {name: node} of the defined dynamic symbols of the shared library."""
    try:
        out = subprocess.run([nm, '-D', '--defined-only', lib], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        problems.append('cannot run %s -D --defined-only %s: %s' % (nm, lib, e))
        return {}
    exports = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        typ, full = parts[-2], parts[-1]
        name, sep, ver = full.partition('@')
        default = ver.startswith('@')
        ver = ver.lstrip('@')
        if typ == 'A' and NODE_RE.match(name):
            continue  # the version node's own absolute symbol
        if not name.startswith('fy_'):
            problems.append('%s exports %s (type %s), which lacks the fy_ prefix' % (lib, full, typ))
            exports[name] = ver
            continue
        if typ != 'T':
            problems.append('%s exports %s with type %s; only functions (T) may be exported' % (lib, full, typ))
        if not sep or not default or not NODE_RE.match(ver):
            problems.append('%s exports %s without a default FORGEYARD_SANDBOX_* version (@@)' % (lib, full))
        exports[name] = ver
    return exports


def man_pages(man_dir, problems):
    """(d): {name: kind} for every man/*.3 file; kind is 'page' or 'alias'."""
    pages = {}
    files = sorted(f for f in os.listdir(man_dir) if f.endswith('.3'))
    for f in files:
        with open(os.path.join(man_dir, f), encoding='utf-8') as fh:
            lines = [l for l in fh.read().splitlines() if l.strip()]
        name = f[:-2]
        if lines and lines[0].startswith('.so'):
            m = re.match(r'^\.so man3/(' + IDENT + r')\.3$', lines[0])
            if len(lines) != 1 or not m:
                problems.append('man/%s: an alias page must be exactly one line ".so man3/<page>.3"' % f)
            else:
                target = m.group(1) + '.3'
                if not os.path.exists(os.path.join(man_dir, target)):
                    problems.append('man/%s: alias target man/%s does not exist' % (f, target))
                else:
                    with open(os.path.join(man_dir, target), encoding='utf-8') as th:
                        if th.read().lstrip().startswith('.so'):
                            problems.append('man/%s: alias target man/%s is itself an alias' % (f, target))
                        else:
                            th.seek(0)
                            if not re.search(r'\b' + re.escape(name) + r'\b', th.read()):
                                problems.append('man/%s: the real page man/%s does not mention %s'
                                                % (f, target, name))
            pages[name] = 'alias'
        else:
            pages[name] = 'page'
    return pages


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--headers', nargs='*', default=[])
    ap.add_argument('--header-dir', action='append', default=[],
                    help='scan every *.h and *.h.in in this directory')
    ap.add_argument('--sym', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--man-dir', required=True)
    ap.add_argument('--nm', default=os.environ.get('NM', 'nm'))
    a = ap.parse_args()

    problems = []
    headers = list(a.headers)
    for d in a.header_dir:
        headers += sorted(os.path.join(d, f) for f in os.listdir(d)
                          if f.endswith('.h') or f.endswith('.h.in'))
    if not headers:
        ap.error('no headers given (--headers or --header-dir)')
    lists = {
        'headers (FY_API)': set(header_functions(headers, problems)),
        'version script (%s)' % os.path.basename(a.sym): None,
        'nm -D (%s)' % os.path.basename(a.lib): None,
        'man pages (man/*.3)': None,
    }
    sym = sym_entries(a.sym, problems)
    exp = library_exports(a.nm, a.lib, problems)
    man = man_pages(a.man_dir, problems)
    keys = list(lists)
    lists[keys[1]] = set(sym)
    lists[keys[2]] = set(exp)
    lists[keys[3]] = set(man)

    for name in sorted(set(sym) & set(exp)):
        if sym[name] != exp[name]:
            problems.append('%s is in node %s of the version script but exported as @@%s'
                            % (name, sym[name], exp[name]))
    for src in keys:
        for name in sorted(lists[src]):
            if not name.startswith('fy_'):
                problems.append('%s lists %s, which lacks the fy_ prefix' % (src, name))

    # A list that could not be read at all is reported once, not per symbol.
    usable = [k for k in keys if lists[k] is not None and lists[k] != set() or k == keys[0]]
    union = set().union(*(lists[k] for k in usable))
    short = ['header', '.sym', 'nm -D', 'man']
    rows = []
    for name in sorted(union):
        if all(name in lists[k] for k in usable):
            continue
        marks = ['yes' if name in lists[k] else ('n/a' if k not in usable else 'NO')
                 for k in keys]
        rows.append('  %-34s %s' % (name, ' '.join('%-7s' % m for m in marks)))

    if rows or problems:
        sys.stderr.write('check-symbols: the exported API is not listed consistently.\n')
        if rows:
            sys.stderr.write('\nSymbols not in all four lists:\n  %-34s %s\n'
                             % ('symbol', ' '.join('%-7s' % h for h in short)))
            sys.stderr.write('\n'.join(rows) + '\n')
        if problems:
            sys.stderr.write('\nProblems:\n' + ''.join('  - %s\n' % p for p in problems))
        sys.stderr.write(
            '\nEvery exported function needs: an FY_API declaration in include/forgeyard/*.h, '
            'an entry in the newest node of lib/forgeyard-sandbox.sym, an implementation, '
            'and man/<function>.3 (a real page, or the one line ".so man3/<page>.3" '
            'pointing at the page that documents it).\n')
        return 1
    for k in keys:
        print('%-40s %d functions' % (k, len(lists[k])))
    print('check-symbols: %d exports agree in all four lists' % len(union))
    return 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that a developers' page names only things that exist.

    check-names.py SOURCE_ROOT PAGE.md

Every `path` in backticks that looks like a file or folder of the tree
must exist; every `name()` in backticks must be defined in a C source or
header of the tree (a function, or a function-like macro); every
`path:name()` must be defined in that file. Prints TAP, one line a name.
"""
import os
import re
import sys

root, page = sys.argv[1], sys.argv[2]
text = open(os.path.join(root, page)).read()
spans = re.findall(r'`([^`\n]+)`', text)

sources = {}
for top in ('tdat', 'protocol', 'tsync', 'agent', 'recorder', 'sim', 'cli', 'util',
            'tests', 'bench'):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            if f.endswith(('.c', '.h')):
                p = os.path.join(d, f)
                sources[os.path.relpath(p, root)] = open(p, errors='replace').read()


def defined(name, text):
    # a definition or declaration at the start of a line (kernel style puts
    # the return type before it, possibly on the line above), or a macro
    pat = r'(^|\n)[A-Za-z_][^;\n()]*\b%s\(|#define %s\(' % (re.escape(name), re.escape(name))
    return re.search(pat, text) is not None


every = set()
for d, dirs, files in os.walk(root):
    dirs[:] = [x for x in dirs if not x.startswith(('.', 'build'))]
    for f in files + dirs:
        every.add(os.path.relpath(os.path.join(d, f), root))

checks = []
seen = set()
for s in spans:
    s = s.strip()
    m = re.fullmatch(r'([\w./-]+):(\w+)\(\)', s)
    if m:
        checks.append(('func-in', s, m.group(1), m.group(2)))
        continue
    m = re.fullmatch(r'(\w+)\(\)', s)
    if m:
        checks.append(('func', s, None, m.group(1)))
        continue
    if re.fullmatch(r'[\w.-]+(/[\w.-]+)+/?', s) or re.fullmatch(r'[\w-]+\.(c|h|sh|md|build|conf|py)', s):
        checks.append(('path', s, s, None))

n = 0
failed = 0
out = []
for kind, s, path, name in checks:
    if s in seen:
        continue
    seen.add(s)
    n += 1
    if kind == 'path':
        p = path.rstrip('/')
        ok = os.path.exists(os.path.join(root, p)) or any(
            k.endswith('/' + p) for k in every)
    elif kind == 'func-in':
        ok = path in sources and defined(name, sources[path])
    else:
        ok = any(defined(name, t) for t in sources.values())
    if not ok:
        failed += 1
    out.append('%s %d - %s %s' % ('ok' if ok else 'not ok', n, page, s))
if n == 0:
    print('1..1\nnot ok 1 - %s names nothing to check' % page)
    sys.exit(1)
print('1..%d' % n)
print('\n'.join(out))
sys.exit(1 if failed else 0)

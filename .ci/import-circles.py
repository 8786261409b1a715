#!/usr/bin/env python3
"""Import circles between the files of each crate (production code only).

usage: cycles.py CRATE_SRC_DIR...   (e.g. worker/src runtime/src)
A file's module path comes from its place (a/b.rs and a/b/mod.rs are a::b). An edge A -> B when
A's production code (before #[cfg(test)]) names crate::B..., super::..., or a child module of A
by its bare name. Prints each strongly connected set of 2+ files; exits 1 if any.
"""
import os, re, sys

def modpath(root, f):
    rel = os.path.relpath(f, root)[:-3].split(os.sep)
    if rel[-1] in ('lib', 'main'): rel = rel[:-1]
    elif rel[-1] == 'mod': rel = rel[:-1]
    return tuple(rel)

def prod(text):
    m = re.search(r'^\s*#\[cfg\(test\)\]', text, re.M)
    return text[:m.start()] if m else text

def strip_comments(text):
    text = re.sub(r'//[^\n]*', '', text)
    return re.sub(r'/\*.*?\*/', '', text, flags=re.S)

def expand(tree):
    """a::{b, c::{d, e}} -> [a::b, a::c::d, a::c::e]"""
    i = tree.find('{')
    if i < 0: return [re.sub(r'as\w+$', '', tree)] if ' as ' not in tree else [tree.split(' as ')[0]]
    prefix, depth, items, cur = tree[:i], 0, [], ''
    for ch in tree[i+1:tree.rfind('}')]:
        if ch == '{': depth += 1
        if ch == '}': depth -= 1
        if ch == ',' and depth == 0: items.append(cur); cur = ''
        else: cur += ch
    items.append(cur)
    out = []
    for it in items:
        if it: out += [prefix + e for e in expand(it)]
    return out

def analyse(root):
    files = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            if f.endswith('.rs') and not f.endswith('tests.rs') and f != 'tests.rs':
                p = os.path.join(d, f)
                files[modpath(root, p)] = strip_comments(prod(open(p).read()))
    mods = set(files)
    def resolve(path):
        # longest prefix that is a module file
        for n in range(len(path), -1, -1):
            if tuple(path[:n]) in mods: return tuple(path[:n])
        return ()
    edges = {m: set() for m in mods}
    for m, text in files.items():
        for u in re.finditer(r'\buse\s+([^;]+);', text):
            for path in expand(re.sub(r'\s+', '', u.group(1))):
                parts = [p for p in path.split('::') if p and p != 'self']
                if not parts: continue
                if parts[0] == 'crate': t = resolve(parts[1:])
                elif parts[0] == 'super':
                    ups = 0
                    while parts and parts[0] == 'super': ups += 1; parts = parts[1:]
                    t = resolve(list(m[:max(len(m) - ups, 0)]) + parts)
                elif m + (parts[0],) in mods: t = resolve(list(m) + parts)
                else: continue
                if t != m: edges[m].add(t)
        for hit in re.finditer(r'\bcrate((?:::\w+)+)', text):
            t = resolve(hit.group(1).split('::')[1:])
            if t != m and t != () : edges[m].add(t)
        for hit in re.finditer(r'\b((?:super::)+)((?:\w+::)*\w+)', text):
            ups = hit.group(1).count('super::')
            # a mod.rs/lib.rs file's own module is m; super goes to its parent
            base = list(m[:len(m)-ups]) if ups <= len(m) else []
            t = resolve(base + hit.group(2).split('::'))
            if t != m: edges[m].add(t)
        for hit in re.finditer(r'\bsuper::\{', text):
            t = m[:-1]
            if t != m: edges[m].add(t)
        # bare child references: `child::` where m + (child,) is a module
        for hit in re.finditer(r'(?<![:\w])(\w+)::', text):
            c = m + (hit.group(1),)
            if c in mods: edges[m].add(c)
    # Tarjan
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)
    def strong(v):
        index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in mods: continue
            if w not in index: strong(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(comp)
    for v in sorted(mods):
        if v not in index: strong(v)
    return out, edges

bad = False
for root in sys.argv[1:]:
    comps, edges = analyse(root)
    for c in comps:
        bad = True
        names = ['::'.join(x) or 'lib' for x in c]
        print(f'{root}: circle: ' + ' <-> '.join(sorted(names)))
        for a in c:
            for b in edges[a]:
                if b in c: print(f'    {"::".join(a) or "lib"} -> {"::".join(b) or "lib"}')
sys.exit(1 if bad else 0)

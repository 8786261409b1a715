#!/usr/bin/env python3
"""The layout rules of the workspace, checked on every crate's src/ (production code only:
what comes before `#[cfg(test)]`, in files not named `*tests.rs`):

- no import circle between files: a file's module path comes from its place (a/b.rs and
  a/b/mod.rs are a::b); an edge A -> B when A names crate::B..., super::..., or a child module
  by its bare name (a `use` tree or a path in code). A parent that uses its children must not
  be used by them, and lib.rs re-exports count as edges, so code imports from the defining
  module;
- no production file over 600 lines;
- no `too_many_arguments` allowed: a state object carries what travels together;
- one folder-module style: `mod.rs` inside the folder, never `foo.rs` beside `foo/`;
- the crates depend on each other only along the arrows in `ARROWS` (a receipts crate a third
  party can use without the runtime; a CLI that does not depend on the benchmarks).

usage: layout.py [CRATE_SRC_DIR...]   (default: every workspace member's src/)
Prints each problem; exits 1 if there is any.
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

def members():
    text = open('Cargo.toml').read()
    listed = re.search(r'members\s*=\s*\[([^\]]*)\]', text).group(1)
    return [m + '/src' for m in re.findall(r'"([^"]+)"', listed) if os.path.isdir(m + '/src')]

MAX_LINES = 600

# The runx crates each crate may depend on (its [dependencies], not dev-dependencies).
ARROWS = {
    'runx-rules': set(),
    # The V8 snapshot's recipe and maker: the worker's build script links it, so it depends on
    # no runx crate.
    'runx-v8-snapshot': set(),
    'runx-worker': {'runx-rules', 'runx-v8-snapshot'},
    'runx-receipts': set(),
    'runx-profile': {'runx-rules', 'runx-receipts'},
    'runx-runtime': {'runx-worker', 'runx-receipts', 'runx-profile'},
    'runx-harness': {'runx-worker', 'runx-receipts', 'runx-profile', 'runx-runtime'},
    'runx-serve': {'runx-runtime', 'runx-profile', 'runx-receipts'},
    # MCP beside `runx serve`: its bounds and busy error come from the step server.
    'runx-mcp': {'runx-rules', 'runx-runtime', 'runx-profile', 'runx-receipts', 'runx-serve'},
    'runx-workload': {'runx-worker', 'runx-receipts', 'runx-runtime'},
    'runx-cli': {'runx-worker', 'runx-receipts', 'runx-profile', 'runx-runtime', 'runx-harness',
                 'runx-serve', 'runx-mcp', 'runx-workload'},
    'runx-benches': {'runx-worker', 'runx-receipts', 'runx-profile', 'runx-runtime',
                     'runx-workload'},
}

def crate_arrows(member):
    text = open(os.path.join(member, 'Cargo.toml')).read()
    name = re.search(r'^name\s*=\s*"([^"]+)"', text, re.M).group(1)
    deps = re.search(r'^\[dependencies\]\n(.*?)(?=^\[|\Z)', text, re.M | re.S)
    used = set(re.findall(r'^(runx-[a-z0-9-]+)\b', deps.group(1), re.M)) if deps else set()
    if name not in ARROWS:
        return [f'{member}/Cargo.toml: crate {name} has no entry in ARROWS of .ci/layout.py']
    return [f'{member}/Cargo.toml: {name} may not depend on {d}' for d in sorted(used - ARROWS[name])]

def other_rules(root):
    problems = []
    for d, dirs, fs in os.walk(root):
        for f in fs:
            if not f.endswith('.rs'):
                continue
            p = os.path.join(d, f)
            text = open(p).read()
            if f.endswith('tests.rs'):
                continue
            n = len(prod(text).split('\n')) - 1
            if n > MAX_LINES:
                problems.append(f'{p}: {n} production lines (at most {MAX_LINES}): split it by idea')
            if 'too_many_arguments' in text:
                problems.append(f'{p}: allows too_many_arguments: make the arguments one value')
            if f != 'mod.rs' and os.path.isdir(os.path.join(d, f[:-3])) and f not in ('lib.rs', 'main.rs'):
                problems.append(f'{p}: beside the folder {f[:-3]}/: use {f[:-3]}/mod.rs')
    return problems

bad = False
if not sys.argv[1:]:
    for member in [m[:-len('/src')] for m in members()] + ['benches']:
        for problem in crate_arrows(member):
            bad = True
            print(problem)
for root in sys.argv[1:] or members():
    for problem in other_rules(root):
        bad = True
        print(problem)
    comps, edges = analyse(root)
    for c in comps:
        bad = True
        names = ['::'.join(x) or 'lib' for x in c]
        print(f'{root}: circle: ' + ' <-> '.join(sorted(names)))
        for a in c:
            for b in edges[a]:
                if b in c: print(f'    {"::".join(a) or "lib"} -> {"::".join(b) or "lib"}')
sys.exit(1 if bad else 0)

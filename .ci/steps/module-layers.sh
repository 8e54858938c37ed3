#!/usr/bin/env bash
# Module layers of the Trace2 runtime (std-shell/src/trace2): every module imports
# only modules listed before it in the "# Layers" list of trace2/mod.rs's docs, so
# the runtime has no import cycles.
#
# Reads the list from the docs (the modules are the names in backticks after the
# last ": " of each numbered item), checks that it names every module that mod.rs
# declares exactly once, then finds every `super::` and `crate::trace2::` path in
# the runtime's code (comments and strings left out, `use` groups included) and
# resolves it to the module it names. A path to a module listed later fails, and so
# does a path through mod.rs's re-exports (`super::Repo`), which hides the module.
#
# MODULE_LAYERS_VERBOSE=1 also prints every edge found.
set -euo pipefail
cd "$(dirname "$0")/../.."

command -v python3 >/dev/null 2>&1 || {
  apt-get update -qq
  apt-get install -y -qq python3 >/dev/null
}

python3 - std-shell/src/trace2 <<'PY'
import os
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1])
VERBOSE = os.environ.get("MODULE_LAYERS_VERBOSE") == "1"
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def mask(text):
    """The text with comments, strings and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        m = re.match(r'b?r(#*)"', text[i:i + 40])
        if m and not re.match(r"\w", text[i - 1:i] or " "):
            end = text.find('"' + m.group(1), i + m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
            continue
        m = re.match(r"b?'(\\.[^']*|[^\\'])'", text[i:i + 12])
        if m and not re.match(r"\w", text[i - 1:i] or " "):
            out.append(" " * m.end())
            i += m.end()
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def layers():
    """The ordered module list of mod.rs's "# Layers" docs, as [(layer, [modules])]."""
    docs = [l[3:].strip() if l.startswith("//!") else None for l in (ROOT / "mod.rs").read_text().splitlines()]
    try:
        start = docs.index("# Layers")
    except ValueError:
        sys.exit("trace2/mod.rs: no '# Layers' section in the module docs")
    items, current = [], None
    for line in docs[start + 1:]:
        if line is None or line.startswith("#"):
            break
        m = re.match(r"(\d+)\.\s+(.*)", line)
        if m:
            current = [m.group(1), m.group(2)]
            items.append(current)
        elif current and line:
            current[1] += " " + line
        elif current and not line:
            current = None
    out = []
    for number, text in items:
        names = re.findall(r"`(" + IDENT + r")`", text.rsplit(": ", 1)[-1])
        out.append((number, names))
    return out


def declared():
    text = mask((ROOT / "mod.rs").read_text())
    return re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", text, re.M)


def files_of(module):
    single = ROOT / f"{module}.rs"
    if single.exists():
        return [single]
    return sorted((ROOT / module).rglob("*.rs"))


def module_path(path):
    """Where `path` sits below trace2: target/background.rs -> ['target', 'background']."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    return parts


def group_heads(text, at):
    """The first name of each element of the `{...}` use group opening at `at`."""
    depth, j, element, heads = 0, at, "", []
    while j < len(text):
        c = text[j]
        if c == "{":
            depth += 1
            if depth == 1:
                j += 1
                continue
        elif c == "}":
            depth -= 1
            if depth == 0:
                heads.append(element)
                break
        if depth == 1 and c == ",":
            heads.append(element)
            element = ""
        elif depth >= 1:
            element += c
        j += 1
    names = []
    for e in heads:
        m = re.match(r"\s*(" + IDENT + r")", e)
        if m:
            names.append(m.group(1))
    return names


def targets(path):
    """(line, name) for every module of trace2 that the code of `path` names."""
    text = mask(path.read_text())
    base = module_path(path)
    # Inline modules (`mod tests { ... }`): (depth their body opens at, name).
    inline, depth, opens = [], 0, {}
    for m in re.finditer(r"\bmod\s+(" + IDENT + r")\s*\{", text):
        opens[m.end() - 1] = m.group(1)
    scope_at = {}
    for i, c in enumerate(text):
        if c == "{":
            depth += 1
            if i in opens:
                inline.append((depth, opens[i]))
        elif c == "}":
            if inline and inline[-1][0] == depth:
                inline.pop()
            depth -= 1
        scope_at[i] = [name for _, name in inline]
    found = []
    pattern = r"(?<![\w:$])((?:super::)+|crate::trace2::)(\{|" + IDENT + r")"
    for m in re.finditer(pattern, text):
        line = text.count("\n", 0, m.start()) + 1
        head = m.group(1)
        if head == "crate::trace2::":
            here = []
        else:
            here = base + scope_at.get(m.start(), [])
            ups = head.count("super::")
            if ups > len(here):
                found.append((line, None))
                continue
            here = here[: len(here) - ups]
        if here:
            continue  # inside the same top-level module
        if m.group(2) == "{":
            names = group_heads(text, m.start(2))
        else:
            names = [m.group(2)]
        for name in names:
            if name not in ("self", "super"):
                found.append((line, name))
    return found


order = layers()
flat = [name for _, names in order for name in names]
problems = []
for name in set(flat):
    if flat.count(name) > 1:
        problems.append(f"trace2/mod.rs: `{name}` is listed in more than one place in '# Layers'")
modules = declared()
for name in modules:
    if name not in flat:
        problems.append(f"trace2/mod.rs: module `{name}` is not in the '# Layers' list")
for name in flat:
    if name not in modules:
        problems.append(f"trace2/mod.rs: '# Layers' lists `{name}`, which mod.rs does not declare")

rank = {name: i for i, name in enumerate(flat)}
layer_of = {name: number for number, names in order for name in names}
edges = set()
for module in modules:
    for path in files_of(module):
        for line, name in targets(path):
            where = f"{path}:{line}"
            if name is None:
                problems.append(f"{where}: a `super::` path that leaves trace2")
            elif name == module:
                continue
            elif name not in rank:
                problems.append(
                    f"{where}: `{name}` is not a module of trace2 (a re-export of mod.rs?): "
                    "name the module that defines it"
                )
            else:
                edges.add((module, name))
                if module in rank and rank[name] > rank[module]:
                    problems.append(
                        f"{where}: `{module}` (layer {layer_of[module]}) imports `{name}` "
                        f"(layer {layer_of[name]}), which is listed after it"
                    )

if VERBOSE:
    for number, names in order:
        print(f"layer {number}:")
        for name in names:
            uses = sorted((t for m, t in edges if m == name), key=rank.get)
            print(f"  {name} -> {', '.join(uses) if uses else '(nothing in trace2)'}")
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"trace2 module layers: {len(flat)} modules in {len(order)} layers, {len(edges)} imports, all downward")
PY

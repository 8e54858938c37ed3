#!/usr/bin/env bash
# Rustdoc examples: lists every public item of core/src and std-shell/src whose doc
# comment has no runnable example that asserts something, then builds the docs of the
# core and the std shell with warnings denied (broken links included).
#
# Public items: `pub` functions, methods, types, traits, constants and statics, the
# items of public traits, and structs made by a macro of the same file. Items under
# `#[cfg(test)]`, `#[cfg(doctest)]` or `#[doc(hidden)]`, trait impls, and binaries
# (`src/bin/`) are skipped.
#
# An item passes when its doc has a ```rust (or plain ```) block containing an
# `assert`, or when it says "example on [`Item`]" and the example of that item (in the
# same file) names it and asserts. Docs given as `#[doc = ...]` attributes are trusted.
#
# Offenders are listed for every file; those under ENFORCED (every library source
# file of the core, the std shell, host, cli and sleds) fail the step.
#
# rustdoc's own lint (`rustdoc::missing_doc_code_examples`) is unstable, skips
# constants and misses items re-exported from private modules, so this reads the
# source instead.
#
# DOC_EXAMPLES_LIST_ONLY=1 skips the doc build; DOC_EXAMPLES_VERBOSE=1 also prints
# every item found.
set -euo pipefail
cd "$(dirname "$0")/../.."

ENFORCED=(
  core/src/
  std-shell/src/
  host/src/
  cli/src/
  sleds/src/
)

command -v python3 >/dev/null 2>&1 || {
  apt-get update -qq
  apt-get install -y -qq python3 >/dev/null
}

python3 - "${ENFORCED[@]}" <<'PY'
import os
import pathlib
import re
import sys

ENFORCED = sys.argv[1:]
VERBOSE = os.environ.get("DOC_EXAMPLES_VERBOSE") == "1"
ROOTS = ["core/src", "std-shell/src", "host/src", "cli/src", "sleds/src", "sleds/aarch64/src"]


def mask(text):
    """The text with comments, strings and char literals blanked (newlines kept), so
    braces and keywords can be found in code only."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
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
        elif re.match(r'(b?r)(#*)"', text[i:i + 40]) and not re.match(r"\w", text[i - 1:i] or " "):
            m = re.match(r'(b?r)(#*)"', text[i:])
            end = text.find('"' + m.group(2), i + m.end())
            j = n if end < 0 else end + 1 + len(m.group(2))
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + '"')
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j]) + '"')
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']{0,8}|[^\\'])'", text[i:])
            if m:
                out.append("'" + " " * (m.end() - 2) + "'")
                i += m.end()
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


FENCE = re.compile(r"^\s*```(.*)$")


def examples(doc):
    """The code of the runnable examples in a doc comment."""
    blocks, cur = [], None
    for line in doc:
        m = FENCE.match(line)
        if m and cur is None:
            info = {t.strip() for t in m.group(1).split(",") if t.strip()}
            runnable = info <= {"rust"} | {f"edition{y}" for y in (2015, 2018, 2021, 2024)}
            cur = [] if runnable else False
        elif m:
            if cur:
                blocks.append("\n".join(cur))
            elif cur == []:
                blocks.append("")
            cur = None
        elif cur:
            cur.append(line)
        elif cur == []:
            cur.append(line)
    return blocks


ITEM_PUB = [
    (re.compile(r"^pub\s+(?:const\s+|async\s+|unsafe\s+|extern\s+\S+\s+)*fn\s+(\w+)"), "fn"),
    (re.compile(r"^pub\s+(struct|enum|union|trait|type)\s+(\w+)"), None),
    (re.compile(r"^pub\s+const\s+(\w+)\s*:"), "const"),
    (re.compile(r"^pub\s+static\s+(?:mut\s+)?(\w+)"), "static"),
]
ITEM_TRAIT = [
    (re.compile(r"^(?:unsafe\s+)?fn\s+(\w+)"), "trait fn"),
    (re.compile(r"^const\s+(\w+)"), "trait const"),
    (re.compile(r"^type\s+(\w+)"), "trait type"),
]


def scan(path):
    text = path.read_text()
    orig = text.split("\n")
    masked = mask(text).split("\n")
    # Macros of this file that define a public struct per invocation.
    generating = set(re.findall(r"macro_rules!\s*(\w+)\s*\{(?:(?!macro_rules!).)*?pub\s+struct\s+\$", text, re.S))
    items = []  # dicts: line, kind, name, doc, owner
    stack_macro, trait_public = [], []  # the macro called, whether the trait is pub
    stack = []  # context kinds
    stmt = ""  # code since the last statement boundary
    doc = []
    skip_next = False  # a #[cfg(test)]/#[cfg(doctest)] applies to the next item
    owner = None  # the type of the impl block being read
    owners = []

    def allows_pub():
        return all(k in ("mod", "impl", "macro") for k in stack)

    for no, (o, m) in enumerate(zip(orig, masked), 1):
        ctx = stack[-1] if stack else "mod"
        s, os_ = m.strip(), o.strip()
        if ctx == "attr":
            pass
        elif os_.startswith("///") and not os_.startswith("////"):
            line = os_[3:]
            doc.append(line[1:] if line.startswith(" ") else line)
            continue
        elif s.startswith("#[") or s.startswith("#!["):
            if re.search(r"#\[cfg\((test|doctest)\)\]|#\[doc\(hidden\)\]", s):
                skip_next = True
            if s.startswith("#[doc"):
                doc.append("<#[doc] attribute>")
        elif s and not stmt.strip():
            # The first line of a statement: is it a public item?
            found = None
            if not skip_next and allows_pub():
                for rx, kind in ITEM_PUB:
                    mm = rx.match(s)
                    if mm:
                        found = (kind or mm.group(1), mm.group(mm.lastindex))
                        break
                if found and found[0] == "fn" and "impl" in stack:
                    found = ("method", found[1])
                if not found and ctx == "macro" and stack_macro[-1] in generating:
                    mm = re.match(r"^([A-Z]\w*)\s*\{", s)
                    if mm and doc:
                        found = ("struct", mm.group(1))
            elif not skip_next and ctx == "trait" and trait_public[-1]:
                for rx, kind in ITEM_TRAIT:
                    mm = rx.match(s)
                    if mm:
                        found = (kind, mm.group(1))
                        break
            if found:
                items.append(dict(line=no, kind=found[0], name=found[1], doc=doc,
                                  owner=owner if "impl" in stack or ctx == "trait" else None))
        if s and ctx != "attr" and not s.startswith("#"):
            doc = []
        # Delimiters and statement boundaries of this line.
        for i, ch in enumerate(m):
            top = stack[-1] if stack else "mod"
            if ch in "{([":
                head = re.sub(r"\s+", " ", stmt).strip()
                if ch == "[" and head.endswith("#") or ch == "[" and head.endswith("#!"):
                    kind = "attr"
                elif top in ("opaque", "attr"):
                    kind = "opaque" if top == "opaque" else "attr"
                elif ch == "{" and skip_next:
                    kind, skip_next = "opaque", False
                elif ch == "{":
                    h = re.sub(r"^(#\[.*?\]\s*)*", "", head)
                    if re.search(r"\bimpl\b", h):
                        kind = "impl"
                        trait_impl = re.search(r"\bfor\b", h)
                        # `impl<T: X> a::Type<T> where ...`: the type's last path segment.
                        ty = re.sub(r"^.*?\bimpl\b\s*", "", h.replace("->", " "))
                        if ty.startswith("<"):
                            depth = 0
                            for k, c in enumerate(ty):
                                depth += {"<": 1, ">": -1}.get(c, 0)
                                if depth == 0:
                                    ty = ty[k + 1:].strip()
                                    break
                        name = re.match(r"(?:\w+::)*(\w+)", ty)
                        owners.append(owner)
                        owner = None if trait_impl else (name.group(1) if name else None)
                        if trait_impl:
                            kind = "opaque"
                    elif re.search(r"\btrait\s+(\w+)", h):
                        kind = "trait"
                        trait_public.append(h.startswith("pub "))
                        owners.append(owner)
                        owner = re.search(r"\btrait\s+(\w+)", h).group(1)
                    elif re.search(r"\bmod\s+\w+$", h):
                        kind = "mod"
                    elif re.search(r"([\w:]+)!$", h):
                        kind = "macro"
                        stack_macro.append(re.search(r"(\w+)!$", h).group(1))
                    else:
                        kind = "opaque"
                elif ch == "(" and re.search(r"(\w+)!$", head) and top != "opaque":
                    kind = "macro"
                    stack_macro.append(re.search(r"(\w+)!$", head).group(1))
                else:
                    kind = "opaque"
                stack.append(kind)
                if ch == "{" or kind == "macro":
                    stmt = ""
                else:
                    stmt += ch
            elif ch in "})]":
                kind = stack.pop() if stack else "mod"
                if kind in ("impl", "trait"):
                    owner = owners.pop()
                if kind == "trait":
                    trait_public.pop()
                if kind == "macro":
                    stack_macro.pop()
                if ch == "}" or kind == "macro":
                    stmt = ""
                    if not stack or stack[-1] != "attr":
                        skip_next = skip_next and kind == "attr"
                else:
                    stmt += ch
                    if kind == "attr" and (not stack or stack[-1] != "attr"):
                        stmt = ""
            elif ch == ";" and (not stack or stack[-1] in ("mod", "impl", "trait", "macro")):
                stmt = ""
                skip_next = False
            else:
                stmt += ch
        stmt += "\n" if stmt.strip() else ""
    return items


def check(path, items):
    by_name = {}
    for it in items:
        by_name.setdefault(it["name"], []).append(it)
    bad = []
    for it in items:
        name = it["name"] if not it["owner"] else f'{it["owner"]}::{it["name"]}'
        where = f'{path}:{it["line"]}: {it["kind"]} {name}'
        if VERBOSE:
            print(f"item {where}")
        if not it["doc"]:
            bad.append(f"{where}: no doc comment")
            continue
        if any(b for b in examples(it["doc"]) if "assert" in b) or "<#[doc] attribute>" in it["doc"]:
            continue
        if examples(it["doc"]):
            bad.append(f"{where}: its example asserts nothing")
            continue
        text = " ".join(it["doc"])
        # "[`f()`]": a function named beside a module of the same name.
        ptr = re.search(r"[Ee]xample on \[`?([\w:]+?)(?:\(\))?`?\]", text)
        if ptr:
            target = ptr.group(1).split("::")[-1]
            use = re.compile(r"\b" + re.escape(it["name"]) + r"\b")
            ok = any(use.search(b) and "assert" in b
                     for t in by_name.get(target, []) for b in examples(t["doc"]))
            if ok:
                continue
            bad.append(f"{where}: the example on {target} does not use it")
            continue
        bad.append(f"{where}: no example")
    return bad


failed = []
listed = 0
for root in ROOTS:
    for path in sorted(pathlib.Path(root).rglob("*.rs")):
        if "/bin/" in str(path):
            continue  # binaries have no public API
        bad = check(path, scan(path))
        if not bad:
            continue
        enforced = any(str(path) == e or (e.endswith("/") and str(path).startswith(e)) for e in ENFORCED)
        print(f"{'FAIL' if enforced else 'todo'} {path}: {len(bad)} item(s) without an example")
        for b in bad:
            print(f"    {b}")
        listed += len(bad)
        if enforced:
            failed.extend(bad)

print(f"{listed} public item(s) without an example; {len(failed)} in enforced files")
sys.exit(1 if failed else 0)
PY

[ "${DOC_EXAMPLES_LIST_ONLY:-}" = 1 ] && exit 0

# The examples themselves run with the workspace tests (`cargo test --workspace`).
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p flightrec-core -p flightrec -p flightrec-host -p flightrec-cli -p flightrec-sleds
# The private items too: the core's and the runtimes' internal reasoning lives in
# their docs (their own target directory, so the public docs above stay as built).
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --all-features --document-private-items \
  --target-dir target/doc-private \
  -p flightrec-core -p flightrec -p flightrec-host -p flightrec-cli -p flightrec-sleds
# The core's Cortex-M modules build on Cortex-M targets only: their docs, private
# items included, on one.
rustup target add thumbv7em-none-eabihf >/dev/null 2>&1 || true
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --features cortex-m,rtt --document-private-items \
  --target thumbv7em-none-eabihf --target-dir target/doc-private -p flightrec-core

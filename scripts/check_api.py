#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors
"""The C API's conventions that a program can check (issue 12; docs: C_API.md).

    python3 scripts/check_api.py [--root DIR] [--only NAME,...]

Checks, each named in its findings:
  comment     every KVRT_API declaration in include/kvrt/*.h has a comment right above it
              (a /* */ or // comment ending on the line before the declaration starts)
  init        every struct whose first field is `size_t struct_size` has <struct>_init
              (or, for a name ending in _config/_info/..., that name + "_init") declared
  min_size    every such struct has its pinned minimum struct_size in src/api/struct_versions.h
              (KVRT_MIN_SIZE_<struct> = KVRT_STRUCT_END(<struct>, <field>)) naming a field the
              struct has, and no entry names a struct that does not exist
  symbols     the KVRT_API functions and cmake/kvrt.symbols list the same names
  rust        every exported symbol is declared in bindings/rust/kvrt-sys/src (fn <name>()
  go          every exported symbol is called in bindings/go/*.go (C.<name>()
  python      every exported symbol is declared in bindings/python/kvrt/_capi.py ("<name>")
  spdx        every source file has an SPDX-License-Identifier line (scripts/spdx.py --check)
  license     the LICENSE copies in the binding packages equal the top-level LICENSE
  deprecated  every KVRT_DEPRECATED("use kvrt_x ...") declaration names a replacement that is
              declared, and its comment says DEPRECATED
  buffers     the buffer convention's shape: a `char *`/`T *` output followed by `size_t
              capacity`-like count is followed by `size_t *written`-like (dst, capacity,
              written) triples: every parameter named *capacity is preceded by a pointer and
              followed by a size_t * named *written
  aliases     every deprecated alias macro (KVRT_KV_*) expands to a KVRT_DTYPE_* name, not a
              bare number (one dtype enum)

Prints one line per finding and a summary; exits 1 when anything is found. Run by ctest as
abi.api_conventions.
"""
import argparse
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import spdx  # noqa: E402  (same directory)

CHECKS = ["comment", "init", "min_size", "symbols", "rust", "go", "python", "spdx", "license", "deprecated",
          "buffers", "aliases"]


def strip_preprocessor_continuations(text):
    return text.replace("\\\n", " ")


def header_files(root):
    return sorted(glob.glob(os.path.join(root, "include", "kvrt", "*.h")))


def api_declarations(root):
    """(header, line number, function name, has comment above) for every KVRT_API declaration."""
    out = []
    decl_re = re.compile(r"^\s*KVRT_API\b")
    for h in header_files(root):
        lines = open(h, encoding="utf-8").read().split("\n")
        for i, line in enumerate(lines):
            if not decl_re.match(line):
                continue
            # The declaration runs until ';' (may span lines); its name is the identifier before '('.
            j, text = i, line
            while ";" not in text and j + 1 < len(lines):
                j += 1
                text += " " + lines[j]
            m = re.search(r"(\w+)\s*\(", text)
            if not m:
                continue
            # Comment right above: the previous non-attribute line ends a comment.
            k = i - 1
            while k >= 0 and re.match(r"^\s*KVRT_DEPRECATED\(", lines[k]):
                k -= 1
            prev = lines[k].rstrip() if k >= 0 else ""
            has_comment = prev.endswith("*/") or prev.lstrip().startswith("//")
            out.append((os.path.relpath(h, root), i + 1, m.group(1), has_comment))
    return out


def deprecated_replacements(root):
    """{deprecated function: the kvrt_ function its KVRT_DEPRECATED("use ...") message names}."""
    out = {}
    for h in header_files(root):
        lines = open(h, encoding="utf-8").read().split("\n")
        for i, line in enumerate(lines):
            m = re.match(r'^\s*KVRT_DEPRECATED\("([^"]*)"\)', line)
            if not m or i + 1 >= len(lines):
                continue
            repl = re.search(r"\b(kvrt_\w+)", m.group(1))
            decl = re.search(r"(\w+)\s*\(", lines[i + 1])
            if repl and decl:
                out[decl.group(1)] = repl.group(1)
    return out


def versioned_structs(root):
    """{struct name: (header, [field names])} for structs whose first field is size_t struct_size."""
    out = {}
    for h in header_files(root):
        text = open(h, encoding="utf-8").read()
        text_nc = re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), text, flags=re.S)
        text_nc = re.sub(r"//[^\n]*", "", text_nc)
        for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", text_nc, re.S):
            body = m.group(2)
            fields = re.findall(r"(\w+)\s*(?:\[[^\]]*\])?\s*;", body)
            fields += re.findall(r"\(\s*\*\s*(\w+)\s*\)\s*\(", body)  # function-pointer fields
            first = body.strip().split(";")[0].split()
            if first[-2:] == ["size_t", "struct_size"]:
                out[m.group(3)] = (os.path.relpath(h, root), fields)
    return out


def pinned_min_sizes(root):
    """{struct: field} from src/api/struct_versions.h (None when the file is missing)."""
    path = os.path.join(root, "src", "api", "struct_versions.h")
    if not os.path.exists(path):
        return None
    text = strip_preprocessor_continuations(open(path, encoding="utf-8").read())
    return {m.group(1): (m.group(2), m.group(3)) for m in re.finditer(
        r"#\s*define\s+KVRT_MIN_SIZE_(\w+)\s+KVRT_STRUCT_END\(\s*(\w+)\s*,\s*(\w+)\s*\)", text)}


def exported_symbols(root):
    path = os.path.join(root, "cmake", "kvrt.symbols")
    return [l.strip() for l in open(path, encoding="utf-8") if l.strip() and not l.startswith("#")]


def read_all(paths):
    return "\n".join(open(p, encoding="utf-8").read() for p in paths)


def self_test():
    """Runs the checks on a small tree with one known defect per check; each must be named."""
    import shutil
    import subprocess
    import tempfile
    tmp = tempfile.mkdtemp(prefix="check_api_selftest.")
    try:
        def put(rel, text):
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                f.write(text)
        spdx_c = "/* SPDX-License-Identifier: MIT */\n"
        put("include/kvrt/x.h", spdx_c + "typedef struct kvrt_a { size_t struct_size; int32_t f; } kvrt_a;\n"
            "/* Documented. */\nKVRT_API kvrt_status kvrt_a_init(kvrt_a *a, size_t n);\n"
            "typedef struct kvrt_b { size_t struct_size; int32_t g; } kvrt_b;\n"
            "KVRT_API kvrt_status kvrt_undocumented(void);\n")
        put("src/api/struct_versions.h", spdx_c + "#define KVRT_MIN_SIZE_kvrt_a KVRT_STRUCT_END(kvrt_a, nofield)\n")
        put("cmake/kvrt.symbols", "kvrt_a_init\nkvrt_undocumented\nkvrt_gone\n")
        put("bindings/rust/kvrt-sys/src/lib.rs", "// SPDX-License-Identifier: MIT\npub fn kvrt_a_init();\n")
        put("bindings/go/x.go", "// SPDX-License-Identifier: MIT\nfunc f() { C.kvrt_a_init() }\n")
        put("bindings/python/kvrt/_capi.py", "# SPDX-License-Identifier: MIT\nX = {'kvrt_a_init': 1}\n")
        put("src/no_spdx.cpp", "int x;\n")
        put("LICENSE", "MIT\n")
        for d in ["bindings/go", "bindings/python", "bindings/rust/kvrt", "bindings/rust/kvrt-sys"]:
            put(d + "/LICENSE", "MIT\n" if d != "bindings/go" else "other\n")
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--root", tmp], capture_output=True,
                             text=True).stdout
        expected = ["[comment] include/kvrt/x.h:6: kvrt_undocumented", "[init] include/kvrt/x.h: kvrt_b has",
                    "[min_size] src/api/struct_versions.h: KVRT_MIN_SIZE_kvrt_a names nofield",
                    "[min_size] include/kvrt/x.h: kvrt_b has no pinned", "[symbols] cmake/kvrt.symbols lists kvrt_gone",
                    "[rust] kvrt_undocumented", "[go] kvrt_undocumented", "[python] kvrt_undocumented",
                    "[rust] kvrt_gone", "[go] kvrt_gone", "[python] kvrt_gone",
                    "[spdx] src/no_spdx.cpp", "[license] bindings/go/LICENSE differs"]
        missed = [e for e in expected if e not in out]
        unexpected = [l for l in out.splitlines() if l.startswith("[") and not any(l.startswith(e) for e in expected)]
        for e in missed:
            print(f"self-test: not found: {e}")
        for l in unexpected:
            print(f"self-test: unexpected finding: {l}")
        if missed or unexpected:
            print(out)
            return 1
        print(f"check_api self-test: all {len(expected)} planted defects found, nothing else")
        return 0
    finally:
        shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(HERE))
    ap.add_argument("--self-test", action="store_true", help="check the checker on a tree with planted defects")
    ap.add_argument("--only", default=",".join(CHECKS), help="comma-separated subset of: " + ", ".join(CHECKS))
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    root = args.root
    only = set(args.only.split(","))
    unknown = only - set(CHECKS)
    if unknown:
        ap.error("unknown check(s): " + ", ".join(sorted(unknown)))
    findings = []

    def find(check, msg):
        findings.append(f"[{check}] {msg}")

    decls = api_declarations(root)
    functions = {name for _, _, name, _ in decls}
    if "comment" in only:
        for h, line, name, ok in decls:
            if not ok:
                find("comment", f"{h}:{line}: {name} has no comment right above its declaration")

    structs = versioned_structs(root)
    if "init" in only:
        for s, (h, _) in sorted(structs.items()):
            if s + "_init" not in functions:
                find("init", f"{h}: {s} has a struct_size but no {s}_init(ptr, struct_size)")

    if "min_size" in only:
        pins = pinned_min_sizes(root)
        if pins is None:
            find("min_size", "src/api/struct_versions.h is missing (the pinned minimum struct_size of each struct)")
            pins = {}
        for s, (h, fields) in sorted(structs.items()):
            if s not in pins:
                find("min_size", f"{h}: {s} has no pinned minimum size (KVRT_MIN_SIZE_{s} in src/api/struct_versions.h)")
                continue
            t, field = pins[s]
            if t != s:
                find("min_size", f"src/api/struct_versions.h: KVRT_MIN_SIZE_{s} measures {t}, not {s}")
            elif field not in fields:
                find("min_size", f"src/api/struct_versions.h: KVRT_MIN_SIZE_{s} names {field}, not a field of {s}")
        for s in sorted(set(pins) - set(structs)):
            find("min_size", f"src/api/struct_versions.h: KVRT_MIN_SIZE_{s} names no versioned struct of include/kvrt")

    symbols = exported_symbols(root)
    if "symbols" in only:
        for name in sorted(functions - set(symbols)):
            find("symbols", f"{name} is declared KVRT_API but not listed in cmake/kvrt.symbols")
        for name in sorted(set(symbols) - functions):
            find("symbols", f"cmake/kvrt.symbols lists {name}, which no header declares")

    deprecated_for = deprecated_replacements(root)
    bindings = {
        "rust": (glob.glob(os.path.join(root, "bindings", "rust", "kvrt-sys", "src", "**", "*.rs"), recursive=True),
                 lambda n: rf"\bfn\s+{n}\s*\(", "bindings/rust/kvrt-sys/src"),
        "go": ([p for p in glob.glob(os.path.join(root, "bindings", "go", "*.go")) if not p.endswith("_test.go")],
               lambda n: rf"\bC\.{n}\s*\(", "bindings/go (non-test files)"),
        "python": ([os.path.join(root, "bindings", "python", "kvrt", "_capi.py")],
                   lambda n: rf"[\"']{n}[\"']", "bindings/python/kvrt/_capi.py"),
    }
    for lang, (paths, pattern, where) in bindings.items():
        if lang not in only:
            continue
        text = read_all(p for p in paths if os.path.exists(p))
        for name in symbols:
            if name in deprecated_for and re.search(pattern(re.escape(deprecated_for[name])), text):
                continue  # a deprecated function is bound through its replacement
            if not re.search(pattern(re.escape(name)), text):
                find(lang, f"{name} is exported but not bound in {where}")

    if "spdx" in only:
        for rel, _ in spdx.source_files(root):
            with open(os.path.join(root, rel), encoding="utf-8", errors="surrogateescape") as f:
                if not spdx.has_tag(f.read()):
                    find("spdx", f"{rel}: no SPDX-License-Identifier line (scripts/spdx.py adds it)")

    if "license" in only:
        top = open(os.path.join(root, "LICENSE"), encoding="utf-8").read()
        for d in ["bindings/go", "bindings/python", "bindings/rust/kvrt", "bindings/rust/kvrt-sys"]:
            p = os.path.join(root, d, "LICENSE")
            if not os.path.exists(p):
                find("license", f"{d}/LICENSE is missing (a copy of LICENSE ships in each package)")
            elif open(p, encoding="utf-8").read() != top:
                find("license", f"{d}/LICENSE differs from LICENSE")

    if "deprecated" in only or "buffers" in only:
        for h in header_files(root):
            rel = os.path.relpath(h, root)
            lines = open(h, encoding="utf-8").read().split("\n")
            for i, line in enumerate(lines):
                m = re.match(r'^\s*KVRT_DEPRECATED\("([^"]*)"\)', line)
                if m and "deprecated" in only:
                    repl = re.search(r"\b(kvrt_\w+)", m.group(1))
                    if not repl or repl.group(1) not in functions:
                        find("deprecated", f"{rel}:{i + 1}: KVRT_DEPRECATED names no declared replacement "
                                           f"(\"use kvrt_x ...\"): {m.group(1)!r}")
                    k = i - 1
                    while k >= 0 and not lines[k].lstrip().startswith("/*"):
                        k -= 1
                    if "DEPRECATED" not in "\n".join(lines[max(k, 0):i]):
                        find("deprecated", f"{rel}:{i + 1}: the comment of a KVRT_DEPRECATED declaration does not "
                                           "say DEPRECATED (since when, what replaces it)")
            if "buffers" not in only:
                continue
            for _, line_no, name, _ in (d for d in decls if d[0] == rel):
                j, text = line_no - 1, lines[line_no - 1]
                while ";" not in text and j + 1 < len(lines):
                    j += 1
                    text += " " + lines[j]
                params = [p.strip() for p in text[text.index("(") + 1:text.rindex(")")].split(",")]
                for pi, prm in enumerate(params):
                    if not re.search(r"\bsize_t\s+\w*capacity$", prm):
                        continue
                    before = params[pi - 1] if pi > 0 else ""
                    after = params[pi + 1] if pi + 1 < len(params) else ""
                    if "*" not in before:
                        find("buffers", f"{rel}:{line_no}: {name}: {prm!r} does not follow its buffer pointer")
                    # (dst, capacity, written) triples; the row copies' (dst, capacity) pairs carry no count
                    # (their size is n_rows x row_bytes, known before the call).
                    if not name.startswith("kvrt_cache_read_rows") and not re.search(r"size_t\s*\*\s*\w*written$", after):
                        find("buffers", f"{rel}:{line_no}: {name}: {prm!r} is not followed by a size_t *written")

    if "aliases" in only:
        ctx_h = os.path.join(root, "include", "kvrt", "context.h")
        text = open(ctx_h, encoding="utf-8").read() if os.path.exists(ctx_h) else ""
        for m in re.finditer(r"^#define\s+(KVRT_KV_\w+)\s+(\S+)", text, re.M):
            if not m.group(2).startswith("KVRT_DTYPE_"):
                find("aliases", f"include/kvrt/context.h: {m.group(1)} is {m.group(2)}, not an alias of a "
                                "KVRT_DTYPE_* value (one dtype enum)")

    for f in findings:
        print(f)
    counts = {}
    for f in findings:
        c = f[1:f.index("]")]
        counts[c] = counts.get(c, 0) + 1
    summary = ", ".join(f"{c}: {counts.get(c, 0)}" for c in CHECKS if c in only)
    print(f"check_api: {len(decls)} declarations, {len(structs)} versioned structs, {len(symbols)} exported "
          f"symbols; findings: {summary}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())

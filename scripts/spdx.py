#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors
"""Adds an SPDX licence header to every source file kvrt owns; --check lists the ones without.

    python3 scripts/spdx.py            # add the header where it is missing (idempotent)
    python3 scripts/spdx.py --check    # exit 1 and name every source file without one
    python3 scripts/spdx.py --root DIR # another checkout (default: this script's repository)

Source files: C and C++ (.c .h .cpp .hpp .cc .inl), CMake (CMakeLists.txt, .cmake,
the configured .in templates), Python, Go, Rust, shell scripts and Makefiles, as listed by
`git ls-files` (tracked plus untracked files that .gitignore does not exclude; without git,
every file under the root except build directories). Data, documentation, TOML and linker
scripts are not sources. The header is two comment lines in the file's own comment syntax,

    SPDX-License-Identifier: MIT
    SPDX-FileCopyrightText: 2026 The kvrt authors

put first, after a shebang line or a Python coding line when there is one, and followed by
a blank line when the next line is not one (so a Go package comment stays the package's
documentation). A file that already has "SPDX-License-Identifier:" in its first lines is
left as it is, whatever identifier it names: files from elsewhere keep their own licence.
"""
import argparse
import os
import re
import subprocess
import sys

LICENSE_ID = "MIT"
COPYRIGHT = "2026 The kvrt authors"
TAG = "SPDX-License-Identifier:"
# How far down an existing identifier still counts (shebang, coding line, a short banner).
SEARCH_LINES = 8

# Comment syntax per file kind: (prefix, suffix).
SLASH = ("// ", "")
BLOCK = ("/* ", " */")  # the C files (public headers are C99 and the C tests -pedantic)
HASH = ("# ", "")

EXT_STYLE = {
    ".c": BLOCK, ".h": BLOCK,
    ".cpp": SLASH, ".hpp": SLASH, ".cc": SLASH, ".inl": SLASH,
    ".go": SLASH, ".rs": SLASH,
    ".py": HASH, ".sh": HASH, ".cmake": HASH,
}
NAME_STYLE = {"CMakeLists.txt": HASH, "Makefile": HASH}
# Configured templates: the style of what they become.
IN_STYLE = {".cmake.in": HASH, ".pc.in": HASH, ".cpp.in": SLASH, ".h.in": BLOCK}
SKIP_DIRS = {".git", "target", "__pycache__", "node_modules"}
# Inputs of the fuzzers and test data are not sources even when their names look like it.
SKIP_PREFIXES = ("tests/fuzz/corpus/", "tests/data/")


def style_of(relpath, root):
    name = os.path.basename(relpath)
    if relpath.startswith(SKIP_PREFIXES):
        return None
    if name in NAME_STYLE:
        return NAME_STYLE[name]
    for suffix, style in IN_STYLE.items():
        if name.endswith(suffix):
            return style
    ext = os.path.splitext(name)[1]
    if ext in EXT_STYLE:
        return EXT_STYLE[ext]
    if ext == "":  # a script without an extension (.ci/run): known by its shebang
        try:
            with open(os.path.join(root, relpath), "rb") as f:
                first = f.readline(200)
        except OSError:
            return None
        if re.match(rb"#!.*\b(sh|bash|python3?)\b", first):
            return HASH
    return None


def list_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True).stdout
        files = sorted({p for p in out.decode("utf-8", "surrogateescape").split("\0") if p})
        return [p for p in files if os.path.isfile(os.path.join(root, p)) and not os.path.islink(os.path.join(root, p))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            rel = os.path.relpath(d, root)
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not (rel == "." and x.startswith("build"))]
            files += [os.path.normpath(os.path.join(rel, n)) for n in names]
        return sorted(files)


def source_files(root):
    for rel in list_files(root):
        style = style_of(rel, root)
        if style:
            yield rel, style


def has_tag(text):
    return any(TAG in line for line in text.splitlines()[:SEARCH_LINES])


def with_header(text, style):
    pre, post = style
    header = [f"{pre}{TAG} {LICENSE_ID}{post}", f"{pre}SPDX-FileCopyrightText: {COPYRIGHT}{post}"]
    lines = text.split("\n")
    at = 0
    if lines and lines[0].startswith("#!"):
        at = 1
    if style is HASH and at < len(lines) and at < 2 and re.match(r"#.*coding[:=]", lines[at]):
        at += 1
    rest = lines[at:]
    sep = [] if (rest and rest[0].strip() == "") or not rest or rest == [""] else [""]
    return "\n".join(lines[:at] + header + sep + rest)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only list the files without an SPDX line (exit 1 if any)")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    missing, changed = [], 0
    for rel, style in source_files(args.root):
        path = os.path.join(args.root, rel)
        with open(path, "r", encoding="utf-8", errors="surrogateescape", newline="") as f:
            text = f.read()
        if has_tag(text):
            continue
        if args.check:
            missing.append(rel)
            continue
        crlf = "\r\n" in text
        new = with_header(text.replace("\r\n", "\n") if crlf else text, style)
        if crlf:
            new = new.replace("\n", "\r\n")
        st = os.stat(path)
        with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
            f.write(new)
        os.chmod(path, st.st_mode)
        changed += 1
    if args.check:
        for rel in missing:
            print(f"{rel}: no {TAG} line (run scripts/spdx.py)")
        return 1 if missing else 0
    print(f"spdx.py: added the header to {changed} file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The layers, checked on the sources' #include lines.

- The engine (runtime/ but its harness folders, devices/, cl_kernels/)
  includes no header of the harness (bring-up, the benchmarks, their
  public headers).
- The harness (runtime/bringup, runtime/bench, runtime/harness) and the
  benchmark programs (bench/) reach the engine through its named interface
  only: core/hs_engine.h, the generated hs_config.h, the public headers and
  the harness's own headers; never a module's private header.
- The tools (tools/) and the examples include the public headers, the
  harness's public headers (tools only) and their own.
- Nothing in runtime/ includes an OpenCL header: OpenCL is reached through
  devices/.

usage: tests/layers_check.py SOURCE_ROOT
Prints each include that breaks a rule (file:line: what and why) and exits
1 if there is one."""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
HARNESS_DIRS = ("runtime/bringup", "runtime/bench", "runtime/harness")
PUBLIC_DIRS = ("runtime/include",)
HARNESS_PUBLIC_DIRS = ("runtime/harness",)


def sources(top):
    for d, _, files in os.walk(os.path.join(ROOT, top)):
        for f in sorted(files):
            if f.endswith((".c", ".h", ".cl")):
                yield os.path.relpath(os.path.join(d, f), ROOT)


def includes(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(1), m.group(2)


def under(path, dirs):
    return any(path == d or path.startswith(d + "/") for d in dirs)


def exists_in(name, dirs):
    return any(os.path.isfile(os.path.join(ROOT, d, name)) for d in dirs)


def is_public(name):
    return exists_in(name, PUBLIC_DIRS) and (name == "hetsage.h" or name.startswith("hetsage/"))


def is_harness_public(name):
    return name.startswith("hetsage/") and exists_in(name, HARNESS_PUBLIC_DIRS)


def is_harness_own(path, name):
    """A header of the harness itself, named from runtime/ or beside the file."""
    here = os.path.dirname(path)
    if under(here, HARNESS_DIRS) and os.path.isfile(os.path.join(ROOT, here, name)):
        return True
    target = os.path.normpath(os.path.join("runtime", name))
    return under(target, HARNESS_DIRS) and os.path.isfile(os.path.join(ROOT, target))


def is_harness_header(path, name):
    if is_harness_public(name):
        return True
    target = os.path.normpath(os.path.join("runtime", name))
    if under(target, HARNESS_DIRS) and os.path.isfile(os.path.join(ROOT, target)):
        return True
    base = os.path.basename(name)
    return any(os.path.isfile(os.path.join(ROOT, d, base)) for d in HARNESS_DIRS[:2])


problems = []


def bad(path, n, name, why):
    problems.append(f"{path}:{n}: {name}: {why}")


engine = [p for top in ("runtime", "devices", "cl_kernels") for p in sources(top)
          if not under(p, HARNESS_DIRS)]
for p in engine:
    for n, kind, name in includes(p):
        if kind == '"' and is_harness_header(p, name):
            bad(p, n, name, "the engine includes a harness header")

for p in [p for top in HARNESS_DIRS + ("bench",) for p in sources(top)]:
    for n, kind, name in includes(p):
        if kind != '"':
            continue
        if name in ("core/hs_engine.h", "hs_config.h") or is_public(name) \
                or is_harness_public(name) or is_harness_own(p, name):
            continue
        bad(p, n, name, "the harness reaches the engine only through core/hs_engine.h")

for top, harness_ok in (("tools", True), ("examples", False)):
    for p in sources(top):
        for n, kind, name in includes(p):
            if kind != '"' and not name.startswith("hetsage"):
                continue
            own = os.path.isfile(os.path.join(ROOT, os.path.dirname(p), name))
            if own or is_public(name) or (harness_ok and is_harness_public(name)):
                continue
            bad(p, n, name, f"{top}/ includes public headers"
                + (" and the harness's" if harness_ok else "") + " only")

for p in sources("runtime"):
    for n, kind, name in includes(p):
        if name.startswith("CL/") or name.startswith("OpenCL/"):
            bad(p, n, name, "runtime/ reaches OpenCL through devices/ only")

checked = len(engine) + sum(1 for top in HARNESS_DIRS + ("bench", "tools", "examples")
                            for _ in sources(top))
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"layers: {checked} files, every include within its layer")

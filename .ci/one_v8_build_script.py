#!/usr/bin/env python3
"""Fail when one cargo invocation ran the `v8` crate's build script more than once.

Reads cargo's JSON messages (`--message-format=json-render-diagnostics`) on stdin. The v8 crate's
build script copies the 187 MB static library to one path shared by every build of the crate
(`target/<profile>/gn_out/obj/librusty_v8.a`, truncating it first). When the worker's build
script needs V8 (it makes the startup snapshot) and cargo builds the crate once for build
scripts and once for the program, two copies race and a rustc reading the library can fail
("failed to build archive ... Bad address"). `[profile.*.package.v8]` in Cargo.toml gives both
uses one profile, so cargo runs the build script once; this check keeps it so.
"""
import json
import sys

runs = []
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        print(line, end="")
        continue
    if message.get("reason") == "build-script-executed" and "#v8@" in message.get("package_id", ""):
        runs.append(message.get("out_dir", "?"))

if len(runs) != 1:
    print(
        f"the v8 crate's build script ran {len(runs)} times in one build (expected once):\n  "
        + "\n  ".join(runs)
        + "\nGive the v8 package one profile for build scripts and the program"
        " ([profile.<name>.package.v8] in Cargo.toml).",
        file=sys.stderr,
    )
    sys.exit(1)

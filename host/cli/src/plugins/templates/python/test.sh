#!/bin/sh
# Builds the plugin, checks that Seshat would load it (and runs it on Seshat's own small fixture),
# then runs it on the recorded session in session.jsonl as Seshat would, changing nothing.
# SESHAT names the seshat binary to use (default: the one on PATH). Exits non-zero on any failure.
set -eu
cd "$(dirname "$0")"
seshat=${SESHAT:-seshat}

sh ./build.sh
"$seshat" plugins check plugin.wasm
"$seshat" plugins test plugin.wasm session.jsonl

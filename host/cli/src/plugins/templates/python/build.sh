#!/bin/sh
# Builds plugin.wasm from app.py with componentize-py, for the `{{world}}` world of the Seshat
# plugin contract in wit/seshat-plugin.wit. Run it from anywhere: sh build.sh
set -eu
cd "$(dirname "$0")"

# The componentize-py this template was written and tested with. Another version may generate a
# different Python API (wit_world, componentize_py_types) or embed another Python.
want=0.25.1
if ! command -v componentize-py >/dev/null 2>&1; then
	echo "build.sh: componentize-py is not installed; install it with: pip install componentize-py==$want" >&2
	exit 1
fi
have=$(componentize-py --version | awk '{ print $NF }')
if [ "$have" != "$want" ]; then
	echo "build.sh: componentize-py $have is installed, but this plugin is built with $want;" >&2
	echo "install it with: pip install componentize-py==$want (a virtualenv keeps it apart)" >&2
	exit 1
fi

# `app` is app.py: its class for the world's export is what Seshat calls.
componentize-py -d wit/seshat-plugin.wit -w {{world}} componentize app -o plugin.wasm

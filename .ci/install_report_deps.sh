#!/usr/bin/env bash
# Debian packages the HTML report's browser test needs: a headless Chromium to render the report
# as a user would, and a CJK font so the Chinese labels render as glyphs rather than boxes.
# Idempotent: when both are already installed it does nothing (no apt-get update), so CI can call
# it on every run. Exits non-zero if anything fails to install.
#
# No `producer | grep -q` here: under `set -o pipefail` grep -q exits at the first match, the
# producer then dies of SIGPIPE and the pipeline fails although the match was found (seen about
# one run in five with fc-list). Outputs are captured first and matched in bash instead.
set -euo pipefail

packages=(chromium fonts-noto-cjk)
missing=()
for pkg in "${packages[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
    if [[ "$status" != *"install ok installed"* ]]; then
        missing+=("$pkg")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "report deps already installed: ${packages[*]}"
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
command -v chromium >/dev/null || { echo "chromium not on PATH after install" >&2; exit 1; }
families="$(fc-list : family)"
if [[ "${families,,}" != *"noto sans cjk"* ]]; then
    echo "Noto Sans CJK font not found after install (fc-list : family lists no 'Noto Sans CJK')" >&2
    exit 1
fi
echo "installed: ${missing[*]}"

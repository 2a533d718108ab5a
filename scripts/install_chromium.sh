#!/usr/bin/env bash
# Debian's Chromium for the browser tests (Playwright cannot download browsers here).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
command -v chromium

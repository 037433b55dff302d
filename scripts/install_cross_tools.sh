#!/usr/bin/env bash
# Installs the tools of the AArch64 cross build and its tests (Debian/Ubuntu, as root or
# with sudo): the cross compiler g++-aarch64-linux-gnu (with the AArch64 C/C++ libraries
# in /usr/aarch64-linux-gnu) and qemu-user, which runs AArch64 programs on this machine.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends g++-aarch64-linux-gnu qemu-user cmake ninja-build

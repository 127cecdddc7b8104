#!/bin/sh
# Install what a fresh Debian 12 machine lacks to build and test hgx.
set -e
PKGS="build-essential autoconf automake libtool pkg-config libcmocka-dev \
libfabric-dev libfabric-bin libucx-dev ucx-utils \
libopenmpi-dev openmpi-bin libmpich-dev mpich libisal-dev libboost-dev valgrind cmake clang libclang-rt-14-dev iproute2 bc \
doxygen clang-format"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "hgx: installing:$missing"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing
fi

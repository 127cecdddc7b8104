#!/bin/sh
# Install dependencies, build hgx, run the demo job (NA ping-pong over ofi+tcp).
set -e
cd "$(dirname "$0")/.."
sh tools/install-deps.sh
[ -x configure ] || autoreconf -fi
mkdir -p build && cd build
[ -f Makefile ] || ../configure --without-mpi --without-ucx
make -j"$(nproc)"
./examples/na_pingpong ofi+tcp 2000

#!/bin/sh
# shm-no-cma.sh -- test_na over ofi+shm with shm told not to use CMA
# (FI_SHM_DISABLE_CMA=1): messages above shm's inject size then have no
# single-message path but their two pieces (docs/na-ofi.md), and the 8 KiB
# messages of test_expected_early_many must still all arrive.
set -u
name=shm-no-cma
bin=${top_builddir:-.}/tests/test_na
if ! grep -q "define HGX_HAVE_OFI 1" "${top_builddir:-.}/config.h"; then
    echo "$name: SKIP: built without libfabric"
    exit 77
fi
FI_SHM_DISABLE_CMA=1 HGX_TEST_TRANSPORTS=ofi+shm "$bin"

#!/bin/sh
# make check entry: the bound on held messages, at the smallest setting of
# HGX_NA_UNEXPECTED_MAX (16 of 64 held) and at the default (all 64 held).
set -e
HGX_NA_UNEXPECTED_MAX=16 "$top_srcdir/mpitests/run-mpi.sh" 2 ./mpitests/test_na_mpi_held 16
env -u HGX_NA_UNEXPECTED_MAX "$top_srcdir/mpitests/run-mpi.sh" 2 ./mpitests/test_na_mpi_held 64

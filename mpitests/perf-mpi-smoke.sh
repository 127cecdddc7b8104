#!/bin/sh
# make check entry: every hgx-perf mode over mpi+static (rate with 3 client ranks).
HGX_PERF_SMOKE_TRANSPORTS=mpi+static exec sh "$top_srcdir/tests/perf-smoke.sh"

/*
 * na_rma.h -- what the layers above NA may ask of the RMA path of a class
 * without knowing which plugin runs.
 */
#ifndef NA_RMA_H
#define NA_RMA_H

#include "na.h"

#include <stddef.h>

/* For a plugin that names no piece size. The plugins here all take 16 MiB:
 * each piece costs a completion (UCX: a flush; MPI: an emulated request and
 * CTS), and pieces of 256 KiB held bulk at 0.5-0.9x raw (docs/performance.md). */
#define NA_RMA_PIECE_MAX_DEFAULT ((size_t)256 * 1024)

/* Largest piece a bulk transfer should give one NA_Put/NA_Get on na_class. */
size_t na_rma_piece_max(const na_class_t *na_class);

#endif /* NA_RMA_H */

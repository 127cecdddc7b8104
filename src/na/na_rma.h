/*
 * na_rma.h -- what the layers above NA may ask of the RMA path of a class
 * without knowing which plugin runs.
 */
#ifndef NA_RMA_H
#define NA_RMA_H

#include "na.h"

#include <stddef.h>

/* Pieces of 256 KiB overlap well on UCX and MPI (measured). */
#define NA_RMA_PIECE_MAX_DEFAULT ((size_t)256 * 1024)

/* Largest piece a bulk transfer should give one NA_Put/NA_Get on na_class. */
size_t na_rma_piece_max(const na_class_t *na_class);

#endif /* NA_RMA_H */

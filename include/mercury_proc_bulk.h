/**
 * \file mercury_proc_bulk.h
 * Proc routine for bulk handles inside RPC arguments.
 */
#ifndef MERCURY_PROC_BULK_H
#define MERCURY_PROC_BULK_H

#include "mercury_bulk.h"
#include "mercury_proc.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Proc routine for an hg_bulk_t: HG_ENCODE serializes the descriptor,
 * HG_DECODE deserializes it (untrusted bytes) into a new handle, HG_FREE
 * releases that handle with HG_Bulk_free(). HG_BULK_NULL travels as an empty
 * descriptor.
 * \param[in,out] proc processor (its class is used to decode)
 * \param[in,out] data pointer to an hg_bulk_t
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_OVERFLOW, HG_PROTOCOL_ERROR, HG_NOMEM
 */
HG_PUBLIC hg_return_t hg_proc_hg_bulk_t(hg_proc_t proc, void *data);

#ifdef __cplusplus
}
#endif

#endif /* MERCURY_PROC_BULK_H */

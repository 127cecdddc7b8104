/**
 * \file mercury_types.h
 * Public types of the HG (RPC) layer: handles, addresses, callbacks.
 *
 * Names, members and values follow Mercury 2.4 so that Mercury programs build
 * against hgx unchanged. As in Mercury, the types shared with the core layer
 * (sizes, ids, return codes, init info) are in mercury_core_types.h, which
 * this header includes.
 */
#ifndef MERCURY_TYPES_H
#define MERCURY_TYPES_H

#include "mercury_core_types.h"

typedef struct hg_class hg_class_t;     /**< opaque HG class */
typedef struct hg_context hg_context_t; /**< opaque HG context */
typedef struct hg_addr *hg_addr_t;      /**< peer address */
typedef struct hg_handle *hg_handle_t;  /**< RPC handle */
typedef struct hg_bulk *hg_bulk_t;      /**< bulk descriptor */
typedef struct hg_proc *hg_proc_t;      /**< serialization processor */
typedef struct hg_op_id *hg_op_id_t;    /**< operation id (HG_Cancel) */

/** What HG_Get_info() returns about a handle. */
struct hg_info {
    hg_class_t *hg_class;  /**< class of the handle */
    hg_context_t *context; /**< context of the handle */
    hg_addr_t addr;        /**< origin (at the target) or target (at the origin) */
    hg_id_t id;            /**< RPC id */
    uint8_t context_id;    /**< context id at the peer */
};

/** Memory type of a bulk region (hgx supports host memory only). */
typedef enum hg_mem_type {
    HG_MEM_TYPE_HOST = NA_MEM_TYPE_HOST,
    HG_MEM_TYPE_CUDA = NA_MEM_TYPE_CUDA,
    HG_MEM_TYPE_ROCM = NA_MEM_TYPE_ROCM,
    HG_MEM_TYPE_ZE = NA_MEM_TYPE_ZE,
    HG_MEM_TYPE_MAX = NA_MEM_TYPE_MAX,
    HG_MEM_TYPE_UNKNOWN = NA_MEM_TYPE_UNKNOWN
} hg_mem_type_t;

/** Attributes for HG_Bulk_create_attr(). */
struct hg_bulk_attr {
    hg_mem_type_t mem_type; /**< memory type */
    uint64_t device;        /**< device id, if any */
};

/** Direction of a bulk transfer. */
typedef enum hg_bulk_op {
    HG_BULK_PUSH, /**< write local data into the origin's region */
    HG_BULK_PULL  /**< read the origin's region into local memory */
} hg_bulk_op_t;

/** Result of HG_Addr_lookup1(). */
struct hg_cb_info_lookup {
    hg_addr_t addr; /**< address found */
};

/** Result of HG_Forward(). */
struct hg_cb_info_forward {
    hg_handle_t handle; /**< handle forwarded */
};

/** Result of HG_Respond(). */
struct hg_cb_info_respond {
    hg_handle_t handle; /**< handle responded on */
};

/** Result of HG_Bulk_transfer(). */
struct hg_cb_info_bulk {
    hg_bulk_t origin_handle; /**< origin descriptor */
    hg_bulk_t local_handle;  /**< local descriptor */
    hg_bulk_op_t op;         /**< push or pull */
    hg_size_t size;          /**< bytes transferred */
};

/** What a completion callback is given; `type` says which union member is valid. */
struct hg_cb_info {
    /** Per-operation result: the member named after the type. */
    union {
        struct hg_cb_info_lookup lookup;   /**< HG_CB_LOOKUP */
        struct hg_cb_info_forward forward; /**< HG_CB_FORWARD */
        struct hg_cb_info_respond respond; /**< HG_CB_RESPOND */
        struct hg_cb_info_bulk bulk;       /**< HG_CB_BULK */
    } info;
    void *arg;         /**< the arg passed when posting */
    hg_cb_type_t type; /**< which operation completed */
    hg_return_t ret;   /**< HG_SUCCESS, HG_CANCELED or an error */
};

/** RPC handler, run at the target for each request. */
typedef hg_return_t (*hg_rpc_cb_t)(hg_handle_t handle);
/** Completion callback. */
typedef hg_return_t (*hg_cb_t)(const struct hg_cb_info *callback_info);
/** Proc routine: encodes, decodes or frees the struct at data. */
typedef hg_return_t (*hg_proc_cb_t)(hg_proc_t proc, void *data);

#define HG_ADDR_NULL ((hg_addr_t)0)       /**< no address */
#define HG_HANDLE_NULL ((hg_handle_t)0)   /**< no RPC handle */
#define HG_BULK_NULL ((hg_bulk_t)0)       /**< no bulk handle */
#define HG_PROC_NULL ((hg_proc_t)0)       /**< no processor */
#define HG_OP_ID_NULL ((hg_op_id_t)0)     /**< no operation id */
#define HG_OP_ID_IGNORE ((hg_op_id_t *)1) /**< pass as op_id when none is wanted */

/* Bulk region permissions (Mercury declares these in mercury_bulk.h). */
#define HG_BULK_READ_ONLY (1 << 0)  /**< remote peers may read (pull) the region */
#define HG_BULK_WRITE_ONLY (1 << 1) /**< remote peers may write (push) the region */
/** Remote peers may read and write the region. */
#define HG_BULK_READWRITE (HG_BULK_READ_ONLY | HG_BULK_WRITE_ONLY)

#endif /* MERCURY_TYPES_H */

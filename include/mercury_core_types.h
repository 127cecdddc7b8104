/**
 * \file mercury_core_types.h
 * Types and constants of the HG layer that do not name a handle: sizes and
 * ids, init info, return codes, callback and proc operation kinds, counters,
 * version macros. mercury_types.h includes it; Mercury 2.4 programs that
 * include it alone get what Mercury's header of that name gives them.
 */
#ifndef MERCURY_CORE_TYPES_H
#define MERCURY_CORE_TYPES_H

#include "mercury_config.h"
#include "na_types.h"

typedef uint64_t hg_size_t; /**< size in bytes */
typedef uint64_t hg_id_t;   /**< RPC id */

/** How much of each RPC message is checksummed. */
typedef enum hg_checksum_level {
    HG_CHECKSUM_NONE,        /**< no checksum */
    HG_CHECKSUM_RPC_HEADERS, /**< RPC headers only */
    HG_CHECKSUM_RPC_PAYLOAD  /**< headers and payload (never bulk data) */
} hg_checksum_level_t;

/**
 * Options for HG_Init_opt(); start from HG_INIT_INFO_INITIALIZER.
 * Zero members mean "use the default".
 */
struct hg_init_info {
    struct na_init_info na_init_info; /**< passed on to NA_Initialize_opt() */
    na_class_t *na_class; /**< existing NA class to use (info string ignored) */
    /** Unexpected receives a listening context posts when created (0: 64). */
    uint32_t request_post_init;
    /** Receives a listening context adds each time its posted receives have
     * all been consumed before any was posted again, as Mercury grows its
     * pool of handles (0: 64; negative: the pool never grows). Growth stops
     * at 4096 receives per context. */
    int32_t request_post_incr;
    /** Not supported (a warning says so): hgx opens no second, shared-memory
     * class; a class reaches node-local peers through its own transport
     * (ucx+all picks UCX's shared-memory transports for them). */
    uint8_t auto_sm;
    /** Read with auto_sm only: ignored. */
    const char *sm_info_string;
    hg_checksum_level_t checksum_level; /**< what RPC messages carry a CRC for */
    uint8_t no_bulk_eager;              /**< never inline small bulk data in the RPC */
    uint8_t no_loopback;                /**< send RPCs to self through NA as well */
    uint8_t stats;                      /**< log the counters at HG_Finalize */
    uint8_t no_multi_recv;              /**< do not use multi-receive buffers */
    uint8_t release_input_early;        /**< release input buffers after HG_Get_input() */
    enum na_traffic_class traffic_class;    /**< preferred traffic class */
    bool no_overflow;                       /**< refuse RPCs larger than the eager size */
    unsigned int multi_recv_op_max;         /**< multi-receive buffers posted */
    unsigned int multi_recv_copy_threshold; /**< copy when this few buffers remain */
};

/** The return codes, as X(name) entries in order, for X-macro tables. */
#define HG_RETURN_VALUES                                                                 \
    X(HG_SUCCESS)                                                                        \
    X(HG_PERMISSION)                                                                     \
    X(HG_NOENTRY)                                                                        \
    X(HG_INTERRUPT)                                                                      \
    X(HG_AGAIN)                                                                          \
    X(HG_NOMEM)                                                                          \
    X(HG_ACCESS)                                                                         \
    X(HG_FAULT)                                                                          \
    X(HG_BUSY)                                                                           \
    X(HG_EXIST)                                                                          \
    X(HG_NODEV)                                                                          \
    X(HG_INVALID_ARG)                                                                    \
    X(HG_PROTOCOL_ERROR)                                                                 \
    X(HG_OVERFLOW)                                                                       \
    X(HG_MSGSIZE)                                                                        \
    X(HG_PROTONOSUPPORT)                                                                 \
    X(HG_OPNOTSUPPORTED)                                                                 \
    X(HG_ADDRINUSE)                                                                      \
    X(HG_ADDRNOTAVAIL)                                                                   \
    X(HG_HOSTUNREACH)                                                                    \
    X(HG_TIMEOUT)                                                                        \
    X(HG_CANCELED)                                                                       \
    X(HG_IO_ERROR)                                                                       \
    X(HG_CHECKSUM_ERROR)                                                                 \
    X(HG_NA_ERROR)                                                                       \
    X(HG_OTHER_ERROR)                                                                    \
    X(HG_RETURN_MAX)

/** \cond HGX_INTERNAL */
#define X(a) a,
/** \endcond */
/**
 * Return codes of the HG calls (0 is success); HG_Error_to_string() names
 * them. The values, in order (HG_RETURN_VALUES):
 * - HG_SUCCESS: the call succeeded
 * - HG_PERMISSION: access not granted (bulk handle permissions)
 * - HG_NOENTRY: no such entry (RPC id not registered, nothing to decode)
 * - HG_INTERRUPT: interrupted
 * - HG_AGAIN: resource temporarily unavailable, try again
 * - HG_NOMEM: out of memory
 * - HG_ACCESS: access denied by the transport
 * - HG_FAULT: bad address
 * - HG_BUSY: in use (objects still alive, an operation pending)
 * - HG_EXIST: already exists
 * - HG_NODEV: no such device
 * - HG_INVALID_ARG: invalid argument
 * - HG_PROTOCOL_ERROR: malformed message or descriptor from a peer
 * - HG_OVERFLOW: buffer too small, or a decode past the end of its data
 * - HG_MSGSIZE: message too long for the transport
 * - HG_PROTONOSUPPORT: protocol or plugin not supported
 * - HG_OPNOTSUPPORTED: operation not supported
 * - HG_ADDRINUSE: address already in use
 * - HG_ADDRNOTAVAIL: address cannot be resolved or assigned
 * - HG_HOSTUNREACH: peer unreachable
 * - HG_TIMEOUT: timed out (also: nothing to do within the timeout)
 * - HG_CANCELED: operation cancelled
 * - HG_IO_ERROR: input/output error of the transport
 * - HG_CHECKSUM_ERROR: an RPC checksum did not match
 * - HG_NA_ERROR: an NA error with no HG counterpart
 * - HG_OTHER_ERROR: any other error
 * - HG_RETURN_MAX: number of codes, not a code
 */
typedef enum hg_return { HG_RETURN_VALUES } hg_return_t;
#undef X

/** Older name of HG_INVALID_ARG. */
#define HG_INVALID_PARAM HG_INVALID_ARG
/** Older name of HG_MSGSIZE. */
#define HG_SIZE_ERROR HG_MSGSIZE
/** Older name of HG_NOMEM. */
#define HG_NOMEM_ERROR HG_NOMEM
/** Older name of HG_NOENTRY. */
#define HG_NO_MATCH HG_NOENTRY

/** Kind of operation a completion callback reports on. */
typedef enum hg_cb_type {
    HG_CB_LOOKUP,  /**< HG_Addr_lookup() */
    HG_CB_FORWARD, /**< HG_Forward() */
    HG_CB_RESPOND, /**< HG_Respond() */
    HG_CB_BULK     /**< HG_Bulk_transfer() */
} hg_cb_type_t;

/** Direction of an RPC payload. */
typedef enum { HG_UNDEF, HG_INPUT, HG_OUTPUT } hg_op_t;

/** What a proc routine does with its data. */
typedef enum {
    HG_ENCODE, /**< copy the data into the stream */
    HG_DECODE, /**< extract the data from the stream */
    HG_FREE    /**< release what HG_DECODE allocated */
} hg_proc_op_t;

/** Encode/decode operation flag: the peer is reached through shared memory. */
#define HG_CORE_SM (1 << 0)

/** Diagnostic counters (HG_Class_get_counters()). */
struct hg_diag_counters {
    uint64_t rpc_req_sent_count;        /**< RPC requests sent */
    uint64_t rpc_req_recv_count;        /**< RPC requests received */
    uint64_t rpc_resp_sent_count;       /**< RPC responses sent */
    uint64_t rpc_resp_recv_count;       /**< RPC responses received */
    uint64_t rpc_req_extra_count;       /**< requests that needed an extra buffer */
    uint64_t rpc_resp_extra_count;      /**< responses that needed an extra buffer */
    uint64_t rpc_req_recv_active_count; /**< RPCs currently being handled */
    uint64_t rpc_multi_recv_copy_count; /**< requests copied out of multi-recv buffers */
    uint64_t bulk_count;                /**< bulk transfers */
};

/** Version number of the API as one integer, for HG_Init_opt2(). */
#define HG_VERSION(major, minor) (((major) << 16) | (minor))
/** Major part of an HG_VERSION() number. */
#define HG_MAJOR(version) ((version) >> 16)
/** Minor part of an HG_VERSION() number. */
#define HG_MINOR(version) ((version)&0xffff)
/** True if version v1 is v2 or later. */
#define HG_VERSION_GE(v1, v2) ((v1) >= (v2))
/** True if version v1 is older than v2. */
#define HG_VERSION_LT(v1, v2) ((v1) < (v2))

#define HG_MAX_IDLE_TIME (3600 * 1000) /**< longest timeout in ms */
#define HG_SIZE_MAX (UINT64_MAX)       /**< largest hg_size_t */

/** Default options for HG_Init_opt(): every member 0, NULL or the NA default. */
#define HG_INIT_INFO_INITIALIZER                                                         \
    ((struct hg_init_info){.na_init_info = NA_INIT_INFO_INITIALIZER,                     \
                           .na_class = NULL,                                             \
                           .request_post_init = 0,                                       \
                           .request_post_incr = 0,                                       \
                           .auto_sm = false,                                             \
                           .sm_info_string = NULL,                                       \
                           .checksum_level = HG_CHECKSUM_NONE,                           \
                           .no_bulk_eager = false,                                       \
                           .no_loopback = false,                                         \
                           .stats = false,                                               \
                           .no_multi_recv = false,                                       \
                           .release_input_early = false,                                 \
                           .traffic_class = NA_TC_UNSPEC,                                \
                           .no_overflow = false,                                         \
                           .multi_recv_op_max = 0,                                       \
                           .multi_recv_copy_threshold = 0})

#endif /* MERCURY_CORE_TYPES_H */

/**
 * \file na_types.h
 * Public types of the NA (network abstraction) layer.
 *
 * Names, members and values follow Mercury 2.4 so that Mercury programs build
 * against hgx unchanged.
 */
#ifndef NA_TYPES_H
#define NA_TYPES_H

#include "na_config.h"

#include <limits.h>

typedef struct na_class na_class_t;           /**< opaque NA class */
typedef struct na_context na_context_t;       /**< opaque execution context */
typedef struct na_addr na_addr_t;             /**< opaque peer address */
typedef uint32_t na_tag_t;                    /**< message tag */
typedef struct na_op_id na_op_id_t;           /**< opaque operation id */
typedef struct na_mem_handle na_mem_handle_t; /**< opaque memory handle */
typedef uint64_t na_offset_t;                 /**< offset in a memory handle */

/** Preferred address format. */
enum na_addr_format { NA_ADDR_UNSPEC, NA_ADDR_IPV4, NA_ADDR_IPV6, NA_ADDR_NATIVE };

/** Preferred traffic class (a hint; hgx plugins ignore it). */
enum na_traffic_class {
    NA_TC_UNSPEC,
    NA_TC_BEST_EFFORT,
    NA_TC_LOW_LATENCY,
    NA_TC_BULK_DATA,
    NA_TC_DEDICATED_ACCESS,
    NA_TC_SCAVENGER,
    NA_TC_NETWORK_CTRL
};

/** Memory type of a registered region (hgx supports host memory only). */
enum na_mem_type {
    NA_MEM_TYPE_HOST,
    NA_MEM_TYPE_CUDA,
    NA_MEM_TYPE_ROCM,
    NA_MEM_TYPE_ZE,
    NA_MEM_TYPE_MAX,
    NA_MEM_TYPE_UNKNOWN = NA_MEM_TYPE_MAX
};

/** Options for NA_Initialize_opt(). Zero/NULL members mean "plugin default". */
struct na_init_info {
    const char *ip_subnet; /**< preferred IP subnet */
    /** Ignored (debug log): no hgx transport takes an authorization key
     * (Mercury passes it to libfabric's cxi provider). */
    const char *auth_key;
    size_t max_unexpected_size; /**< hint for the unexpected message size */
    size_t max_expected_size;   /**< hint for the expected message size */
    uint8_t progress_mode;      /**< NA_NO_BLOCK to busy-poll instead of waiting */
    /** Address family of IP-based transports (ofi+tcp, ofi+sockets,
     * ucx+tcp, ucx+all): NA_ADDR_IPV4 or NA_ADDR_IPV6 binds that family
     * only and resolves lookups to it (a host of the other family fails with
     * NA_ADDRNOTAVAIL, as in Mercury); NA_ADDR_UNSPEC and NA_ADDR_NATIVE
     * leave it open (IPv4 preferred). A UCX class serves one family, the
     * one of the address it binds or names, else IPv4 for these two, and
     * takes no IPv6 loopback address (docs/multi-node.md). Shared-memory
     * (ucx+shm included) and MPI addresses are no IP addresses: ignored
     * there. */
    enum na_addr_format addr_format;
    uint8_t max_contexts; /**< number of contexts the class will serve */
    /** 0 (default): any thread may post, progress and trigger, under locks.
     *  NA_THREAD_MODE_SINGLE: the caller promises that one thread at a time
     *  uses the class and all its contexts; NA, the OFI and UCX plugins and
     *  an HG class initialized with it then take no locks (the MPI plugin
     *  keeps its own, shared with its connection threads). Either bit alone
     *  is accepted and changes nothing; any other bit is refused. */
    uint8_t thread_mode;
    /** Ignored (debug log): hgx registers host memory only
     * (NA_MEM_TYPE_HOST). */
    bool request_mem_device;
    /** Preferred traffic class (a hint). */
    enum na_traffic_class traffic_class;
};

/** A contiguous piece of memory, for NA_Mem_handle_create_segments(). */
struct na_segment {
    void *base; /**< start address */
    size_t len; /**< length in bytes */
};

/** Linked list returned by NA_Get_protocol_info(). */
struct na_protocol_info {
    struct na_protocol_info *next; /**< next entry, NULL at the end */
    char *class_name;              /**< plugin ("ofi", "ucx", "mpi") */
    char *protocol_name;           /**< protocol ("tcp", "shm", "static", ...) */
    char *device_name;             /**< device or interface, when known */
};

/** The return codes, as X(name) entries in order, for X-macro tables. */
#define NA_RETURN_VALUES                                                                 \
    X(NA_SUCCESS)                                                                        \
    X(NA_PERMISSION)                                                                     \
    X(NA_NOENTRY)                                                                        \
    X(NA_INTERRUPT)                                                                      \
    X(NA_AGAIN)                                                                          \
    X(NA_NOMEM)                                                                          \
    X(NA_ACCESS)                                                                         \
    X(NA_FAULT)                                                                          \
    X(NA_BUSY)                                                                           \
    X(NA_EXIST)                                                                          \
    X(NA_NODEV)                                                                          \
    X(NA_INVALID_ARG)                                                                    \
    X(NA_PROTOCOL_ERROR)                                                                 \
    X(NA_OVERFLOW)                                                                       \
    X(NA_MSGSIZE)                                                                        \
    X(NA_PROTONOSUPPORT)                                                                 \
    X(NA_OPNOTSUPPORTED)                                                                 \
    X(NA_ADDRINUSE)                                                                      \
    X(NA_ADDRNOTAVAIL)                                                                   \
    X(NA_HOSTUNREACH)                                                                    \
    X(NA_TIMEOUT)                                                                        \
    X(NA_CANCELED)                                                                       \
    X(NA_IO_ERROR)                                                                       \
    X(NA_RETURN_MAX)

/** \cond HGX_INTERNAL */
#define X(a) a,
/** \endcond */
/**
 * Return codes of the NA calls (0 is success); NA_Error_to_string() names
 * them. They are those of hg_return_t with the NA_ prefix, in the same order,
 * from NA_SUCCESS to NA_IO_ERROR (NA has no CHECKSUM_ERROR, NA_ERROR or
 * OTHER_ERROR), then NA_RETURN_MAX, the number of codes.
 */
typedef enum na_return { NA_RETURN_VALUES } na_return_t;
#undef X

/** The callback types, as X(name) entries in order, for X-macro tables. */
#define NA_CB_TYPES                                                                      \
    X(NA_CB_SEND_UNEXPECTED)                                                             \
    X(NA_CB_RECV_UNEXPECTED)                                                             \
    X(NA_CB_MULTI_RECV_UNEXPECTED)                                                       \
    X(NA_CB_SEND_EXPECTED)                                                               \
    X(NA_CB_RECV_EXPECTED)                                                               \
    X(NA_CB_PUT)                                                                         \
    X(NA_CB_GET)                                                                         \
    X(NA_CB_MAX)

/** \cond HGX_INTERNAL */
#define X(a) a,
/** \endcond */
/**
 * Kind of operation a callback reports on (NA_CB_TYPES): NA_CB_SEND_UNEXPECTED,
 * NA_CB_RECV_UNEXPECTED, NA_CB_MULTI_RECV_UNEXPECTED, NA_CB_SEND_EXPECTED,
 * NA_CB_RECV_EXPECTED, NA_CB_PUT, NA_CB_GET, then NA_CB_MAX (the count).
 */
typedef enum na_cb_type { NA_CB_TYPES } na_cb_type_t;
#undef X

/** Result of NA_Msg_recv_unexpected(). */
struct na_cb_info_recv_unexpected {
    size_t actual_buf_size; /**< bytes received, header included */
    na_addr_t *source;      /**< sender; the callback owns it (NA_Addr_free) */
    na_tag_t tag;           /**< tag the sender used */
};

/** Result of NA_Msg_multi_recv_unexpected() (which no hgx plugin supports). */
struct na_cb_info_multi_recv_unexpected {
    size_t actual_buf_size; /**< bytes received */
    na_addr_t *source;      /**< sender; the callback owns it (NA_Addr_free) */
    na_tag_t tag;           /**< tag the sender used */
    void *actual_buf;       /**< where in the buffer the message is */
    bool last;              /**< the buffer is consumed */
};

/** Result of NA_Msg_recv_expected(). */
struct na_cb_info_recv_expected {
    size_t actual_buf_size; /**< bytes received */
};

/** What a completion callback is given. */
struct na_cb_info {
    /** Per-operation result, for the receive types (sends, put and get have none). */
    union {
        /** NA_CB_RECV_UNEXPECTED */
        struct na_cb_info_recv_unexpected recv_unexpected;
        /** NA_CB_MULTI_RECV_UNEXPECTED */
        struct na_cb_info_multi_recv_unexpected multi_recv_unexpected;
        /** NA_CB_RECV_EXPECTED */
        struct na_cb_info_recv_expected recv_expected;
    } info;
    void *arg;         /**< the arg passed when posting */
    na_cb_type_t type; /**< which operation completed */
    na_return_t ret;   /**< NA_SUCCESS, NA_CANCELED or an error */
};

/**
 * Completion callback of a non-blocking NA call, run by NA_Trigger().
 * \param[in] callback_info the outcome; valid during the call only
 */
typedef void (*na_cb_t)(const struct na_cb_info *callback_info);

/** Version number as one integer, for NA_Initialize_opt2(). */
#define NA_VERSION(major, minor) (((major) << 16) | (minor))
/** Major part of an NA_VERSION() number. */
#define NA_MAJOR(version) ((version) >> 16)
/** Minor part of an NA_VERSION() number. */
#define NA_MINOR(version) ((version)&0xffff)
/** True if version v1 is v2 or later. */
#define NA_VERSION_GE(v1, v2) ((v1) >= (v2))
/** True if version v1 is older than v2. */
#define NA_VERSION_LT(v1, v2) ((v1) < (v2))

/** Optional feature: multi-receive buffers (NA_Has_opt_feature()). */
#define NA_OPT_MULTI_RECV (1 << 0)

#define NA_MAX_IDLE_TIME (3600 * 1000) /**< longest timeout in ms */
#define NA_CONTEXT_ID_MAX UINT8_MAX    /**< largest context id */

/* Message buffer allocation flags */
#define NA_SEND (1 << 0)       /**< NA_Msg_buf_alloc(): buffer used to send */
#define NA_RECV (1 << 1)       /**< NA_Msg_buf_alloc(): buffer used to receive */
#define NA_MULTI_RECV (1 << 2) /**< NA_Msg_buf_alloc(): multi-receive buffer */
#define NA_ALLOC_MAX (1 << 3)  /**< first value above the allocation flags */

/* NA_Op_create() flags */
#define NA_OP_SINGLE 0x00 /**< the id serves one operation at a time */
#define NA_OP_MULTI 0x01  /**< the id serves a multi-receive (unsupported) */

#define NA_TAG_MAX UINT_MAX /**< largest tag a plugin can offer */

/* Memory handle access */
#define NA_MEM_READ_ONLY 0x01  /**< remote peers may read (get) the region */
#define NA_MEM_WRITE_ONLY 0x02 /**< remote peers may write (put) the region */
#define NA_MEM_READWRITE 0x03  /**< remote peers may read and write the region */

/* Progress modes */
/** progress_mode: busy-poll, never block in the transport. */
#define NA_NO_BLOCK 0x01
/** progress_mode: no retry of operations in progress: a post the transport
 *  refuses for lack of resources (OFI: the provider's EAGAIN; UCX: the peer's
 *  send window full) fails with NA_AGAIN instead of waiting to be retried. */
#define NA_NO_RETRY 0x02

/* Thread modes */
/** thread_mode bit: one thread uses the class. */
#define NA_THREAD_MODE_SINGLE_CLS (0x01)
/** thread_mode bit: one thread uses each context. */
#define NA_THREAD_MODE_SINGLE_CTX (0x02)
/** thread_mode: one thread at a time uses the class and its contexts (no locks). */
#define NA_THREAD_MODE_SINGLE (NA_THREAD_MODE_SINGLE_CLS | NA_THREAD_MODE_SINGLE_CTX)

/** Default options for NA_Initialize_opt(): one context, every other member 0. */
#define NA_INIT_INFO_INITIALIZER                                                         \
    ((struct na_init_info){.ip_subnet = NULL,                                            \
                           .auth_key = NULL,                                             \
                           .max_unexpected_size = 0,                                     \
                           .max_expected_size = 0,                                       \
                           .progress_mode = 0,                                           \
                           .addr_format = NA_ADDR_UNSPEC,                                \
                           .max_contexts = 1,                                            \
                           .thread_mode = 0,                                             \
                           .request_mem_device = false,                                  \
                           .traffic_class = NA_TC_UNSPEC})

#endif /* NA_TYPES_H */

/*
 * na_plugin.h -- the contract between the NA core (na.c) and its plugins (private).
 *
 * A plugin is one `struct na_ops` table, which also brings the plugin's name,
 * the protocols it serves, the aliases it answers to and its log subsystem:
 * the core knows no plugin by name. configure lists the built plugins' tables
 * (HGX_NA_PLUGIN_LIST, see m4/hgx_na_plugin.m4) and na.c makes na_plugin_table of them.
 * The core validates every argument a user passes, owns op ids, contexts, completion
 * queues and reference counts, and calls the plugin only with checked input. A plugin
 * reports the end of an operation with na_op_complete(); the core queues the callback and
 * NA_Trigger() runs it.
 */
#ifndef NA_PLUGIN_H
#define NA_PLUGIN_H

#include "config.h"
#include "hgx_atomic.h"
#include "hgx_lock.h"
#include "hgx_log.h"
#include "hgx_param.h"
#include "na.h"
#include "na_lead.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <sys/types.h>

/* Life of an op id. Only IDLE ids may be posted; only POSTED ones cancelled. */
enum na_op_state {
    NA_OP_IDLE,      /* free for a new operation */
    NA_OP_POSTED,    /* handed to the plugin */
    NA_OP_CANCELING, /* cancel requested, plugin has not completed it yet */
    NA_OP_QUEUED,    /* completed, callback waiting in the context's queue */
};

struct na_class {
    const struct na_ops *ops;
    const struct na_alias *alias; /* the name the class was made with, or NULL */
    void *plugin_class;           /* plugin private state */
    char *protocol_name;          /* the plugin's: "tcp", "shm", ... */
    bool listen;
    uint8_t max_contexts;
    uint8_t progress_mode; /* NA_NO_BLOCK to never block */
    /* NA_THREAD_MODE_SINGLE: one thread uses the class and its contexts, so
     * the core and the plugins take no lock (either bit alone changes nothing:
     * a plugin's progress on one context completes ops of the others). */
    bool single;
    atomic_int n_contexts; /* live contexts (each refuses to go with ops pending) */
    atomic_long n_addrs;   /* live address references */
    atomic_long n_mem;     /* live memory handles */
    /* How the progress threads of several contexts share the transport
     * (thread-safe classes of a plugin with wakes_contexts). */
    struct na_lead lead;
    struct { /* the plugin's message limits, read once at initialize */
        size_t max_unexpected, max_expected, unexpected_header, expected_header;
        na_tag_t max_tag;
    } msg;
    struct { /* Mercury's SM name "PID-ID" (na_sm_registry.c) */
        unsigned int id;
        pid_t pid;                 /* 0 when not published */
        struct na_sm_names *names; /* peers' names already read */
    } sm;
};

struct na_context {
    na_class_t *na_class;
    void *plugin_context;
    uint8_t id;
    hgx_lock_t cq_lock;
    struct na_op_id *cq_head, *cq_tail; /* FIFO of completed ops */
    atomic_uint cq_count;               /* written under cq_lock, read without it */
    atomic_ulong n_posted;              /* ops ever posted */
    atomic_ulong n_finished;            /* ops ever completed, written under cq_lock */
    /* Threads asleep in poll_wait on this context (under cq_lock), and an
     * eventfd the plugin's poll_wait watches beside its own wait object (-1
     * unless the plugin sets wakes_contexts and the class is thread-safe).
     * Contexts of one class share the transport's queue: a thread that
     * progresses one context also completes ops of the others, and wakes
     * their sleepers through it. */
    unsigned int sleepers;
    int wake_fd;
    /* Set by na_context_interrupt: the next NA_Poll_wait on the context
     * returns (once) instead of sleeping on. */
    atomic_bool interrupted;
};

struct na_op_id {
    na_class_t *na_class;
    na_context_t *context;
    struct na_op_id *cq_next;
    na_cb_t callback;
    struct na_cb_info info;                      /* type, arg, ret and per-type results */
    atomic_int state;                            /* enum na_op_state */
    alignas(max_align_t) unsigned char plugin[]; /* ops->op_size bytes for the plugin */
};

/* Common head of every address; a plugin's address struct starts with it. */
struct na_addr {
    atomic_int refcount;
    na_class_t *na_class;
    bool owned; /* na_addr_init_owned: the plugin holds one reference itself */
    /* NULL, or the public name of a peer known to be absent: an address the
     * core owns and answers for, which no plugin sees (na_unreachable.c). */
    const char *unreachable;
};

/* Common head of every memory handle; a plugin's handle struct starts with it. */
struct na_mem_handle {
    size_t len;          /* total bytes described */
    unsigned long flags; /* NA_MEM_* access a remote peer is granted */
    bool remote;         /* deserialized from a peer */
    bool registered;     /* local and registered with the transport */
};

/*
 * Another name for one of a plugin's protocols, for programs written against
 * a plugin hgx does not have (Mercury's "na+sm"). A class made with
 * "class_name+protocol" is the declaring plugin serving its protocol
 * `serves`; NA_Get_class_name/protocol answer the alias, and its address
 * strings read "class_name+protocol://..." both ways. When several plugins
 * declare one alias, the highest rank serves it in every process of a build.
 */
struct na_alias {
    const char *class_name; /* "na" */
    const char *protocol;   /* "sm" */
    const char *serves;     /* "shm": one of the plugin's protocols */
    unsigned int rank;
    /* Mercury's SM names: each class publishes its address as "PID-ID" and
     * lookups of that form are resolved through the registry (na_sm_registry.c). */
    bool sm_names;
};

/* Parsed info string "plugin+protocol://host:port". */
struct na_info {
    char *plugin_name;                    /* "ofi"; NULL when only a protocol is named */
    char *protocol_name;                  /* "tcp" */
    char *host;                           /* NULL or the host part, port stripped */
    int port;                             /* 0 when absent */
    const struct na_init_info *init_info; /* never NULL */
};

/* Unformatted: clang-format would space these pointer parameters as products. */
/* clang-format off */
/* The parameters of both sends (unexpected and expected messages). */
#define NA_OPS_SEND_PARAMS                                                               \
    (na_class_t *na_class, na_context_t *context, na_op_id_t *op, const void *buf,       \
     size_t buf_size, void *plugin_data, na_addr_t *dest_addr, uint8_t dest_id,          \
     na_tag_t tag)

/*
 * The calls of a plugin's table, each as X(return type, name, parameters):
 * struct na_ops has a pointer member of each, and each has a function type
 * (na_ops_NAME_fn) the plugins declare their functions with, so a signature
 * is written here only. An op marked optional may be NULL.
 */
#define NA_OPS(X)                                                                        \
    X(bool, check_protocol, (const char *protocol_name)) /* optional: protocols */       \
    X(na_return_t, initialize,                                                           \
      (na_class_t *na_class, const struct na_info *info, bool listen))                   \
    X(na_return_t, finalize, (na_class_t *na_class))                                     \
    X(void, cleanup, (void))                                                             \
    X(na_return_t, context_create,                                                       \
      (na_class_t *na_class, na_context_t *context, uint8_t id))                         \
    X(na_return_t, context_destroy, (na_class_t *na_class, na_context_t *context))       \
    /* name is the part after "plugin+" (e.g. "tcp://1.2.3.4:5"). The plugin             \
     * returns an address with refcount 1 (core sets na_class). */                       \
    X(na_return_t, addr_lookup,                                                          \
      (na_class_t *na_class, const char *name, na_addr_t **addr_p))                      \
    /* last reference gone */                                                            \
    X(void, addr_destroy, (na_class_t *na_class, na_addr_t *addr))                       \
    /* optional: release a user's reference of an owned address: the plugin              \
     * drops it (refcount) itself, under its own lock (NA_Addr_free). */                 \
    X(void, addr_owned_release, (na_class_t *na_class, na_addr_t *addr))                 \
    X(na_return_t, addr_set_remove, (na_class_t *na_class, na_addr_t *addr))             \
    X(na_return_t, addr_self, (na_class_t *na_class, na_addr_t **addr_p))                \
    X(bool, addr_cmp, (na_class_t *na_class, na_addr_t *addr1, na_addr_t *addr2))        \
    X(bool, addr_is_self, (na_class_t *na_class, na_addr_t *addr))                       \
    /* Writes "plugin+..." string of at most *buf_size bytes; core handles NULL buf. */  \
    X(na_return_t, addr_to_string,                                                       \
      (na_class_t *na_class, char *buf, size_t *buf_size, na_addr_t *addr))              \
    /* optional: a printable name of the process behind addr, the same in the            \
     * process's own view (its self address) and in its peers' (the address of           \
     * its messages); without it, the addr_to_string string is that name. */             \
    X(na_return_t, addr_key,                                                             \
      (na_class_t *na_class, na_addr_t *addr, char *buf, size_t size))                   \
    X(size_t, addr_get_serialize_size, (na_class_t *na_class, na_addr_t *addr))          \
    X(na_return_t, addr_serialize,                                                       \
      (na_class_t *na_class, void *buf, size_t buf_size, na_addr_t *addr))               \
    X(na_return_t, addr_deserialize,                                                     \
      (na_class_t *na_class, na_addr_t **addr_p, const void *buf, size_t buf_size))      \
    /* Message limits: fixed once initialize returns (the core caches them). */          \
    X(size_t, msg_get_max_unexpected_size, (const na_class_t *na_class))                 \
    X(size_t, msg_get_max_expected_size, (const na_class_t *na_class))                   \
    /* optional: 0 */                                                                    \
    X(size_t, msg_get_unexpected_header_size, (const na_class_t *na_class))              \
    /* optional: 0 */                                                                    \
    X(size_t, msg_get_expected_header_size, (const na_class_t *na_class))                \
    X(na_tag_t, msg_get_max_tag, (const na_class_t *na_class))                           \
    /* optional */                                                                       \
    X(void *, msg_buf_alloc,                                                             \
      (na_class_t *na_class, size_t buf_size, unsigned long flags,                       \
       void **plugin_data_p))                                                            \
    /* optional */                                                                       \
    X(void, msg_buf_free, (na_class_t *na_class, void *buf, void *plugin_data))          \
    /* optional */                                                                       \
    X(na_return_t, msg_init_unexpected,                                                  \
      (na_class_t *na_class, void *buf, size_t buf_size))                                \
    /* Posting calls get a checked, POSTED op id; on error they return it unused. */     \
    X(na_return_t, msg_send_unexpected, NA_OPS_SEND_PARAMS)                              \
    X(na_return_t, msg_recv_unexpected,                                                  \
      (na_class_t *na_class, na_context_t *context, na_op_id_t *op, void *buf,           \
       size_t buf_size, void *plugin_data))                                              \
    X(na_return_t, msg_send_expected, NA_OPS_SEND_PARAMS)                                \
    X(na_return_t, msg_recv_expected,                                                    \
      (na_class_t *na_class, na_context_t *context, na_op_id_t *op, void *buf,           \
       size_t buf_size, void *plugin_data, na_addr_t *source_addr, uint8_t source_id,    \
       na_tag_t tag))                                                                    \
    /* Handles are returned with the common head filled in by the plugin. */             \
    X(na_return_t, mem_handle_create,                                                    \
      (na_class_t *na_class, void *buf, size_t buf_size, unsigned long flags,            \
       na_mem_handle_t **mem_handle_p))                                                  \
    X(na_return_t, mem_handle_create_segments,                                           \
      (na_class_t *na_class, struct na_segment *segments, size_t segment_count,          \
       unsigned long flags, na_mem_handle_t **mem_handle_p))                             \
    X(void, mem_handle_free, (na_class_t *na_class, na_mem_handle_t *mem_handle))        \
    X(size_t, mem_handle_get_max_segments, (const na_class_t *na_class))                 \
    X(na_return_t, mem_register, (na_class_t *na_class, na_mem_handle_t *mem_handle))    \
    X(na_return_t, mem_deregister,                                                       \
      (na_class_t *na_class, na_mem_handle_t *mem_handle))                               \
    X(size_t, mem_handle_get_serialize_size,                                             \
      (na_class_t *na_class, na_mem_handle_t *mem_handle))                               \
    X(na_return_t, mem_handle_serialize,                                                 \
      (na_class_t *na_class, void *buf, size_t buf_size, na_mem_handle_t *mem_handle))   \
    X(na_return_t, mem_handle_deserialize,                                               \
      (na_class_t *na_class, na_mem_handle_t **mem_handle_p, const void *buf,            \
       size_t buf_size))                                                                 \
    /* Put (local to remote memory) or get (remote to local): one op, as the             \
     * two differ only in direction. Bounds and permissions were checked by              \
     * the core; the transfer targets the peer, not one of its contexts. */              \
    X(na_return_t, rma,                                                                  \
      (na_class_t *na_class, na_op_id_t *op, bool put, na_mem_handle_t *local,           \
       na_offset_t local_offset, na_mem_handle_t *remote, na_offset_t remote_offset,     \
       size_t size, na_addr_t *remote_addr))                                             \
    /* optional: -1 */                                                                   \
    X(int, poll_get_fd, (na_class_t *na_class, na_context_t *context))                   \
    /* optional */                                                                       \
    X(bool, poll_try_wait, (na_class_t *na_class, na_context_t *context))                \
    /* Process what the transport has ready, without blocking. */                        \
    X(na_return_t, poll,                                                                 \
      (na_class_t *na_class, na_context_t *context, unsigned int *count_p))              \
    /* Block on the transport's wait object for at most timeout_ms, then process         \
     * what is ready. NA_TIMEOUT when nothing happened. */                               \
    X(na_return_t, poll_wait,                                                            \
      (na_class_t *na_class, na_context_t *context, unsigned int timeout_ms))            \
    /* Start cancelling a POSTED/CANCELING op; it must later be completed (once). */     \
    X(na_return_t, cancel,                                                               \
      (na_class_t *na_class, na_context_t *context, na_op_id_t *op))
/* clang-format on */

struct na_ops {
    const char *class_name; /* "plugin" of "plugin+protocol" */
    /* Protocols served, NULL-terminated: NA_Get_protocol_info lists them, and
     * an info string naming another is refused unless check_protocol accepts it. */
    const char *const *protocols;
    /* Aliases this plugin can serve, ended by a NULL class_name; or NULL. */
    const struct na_alias *aliases;
    enum hgx_log_subsys log_subsys; /* where the core logs about this plugin */
    /* The plugin's environment parameters (hgx_param.h), NULL-terminated, or
     * NULL: with hgx_core_params, every parameter the library reads. */
    const struct hgx_param *const *params;
    /* Largest piece the bulk layer hands to one put/get (na_rma.h); 0 for
     * NA_RMA_PIECE_MAX_DEFAULT. */
    size_t rma_piece_max;
    size_t op_size; /* plugin bytes in each op id (na_op_plugin) */
    /* poll_wait also returns when context->wake_fd becomes readable (and
     * drains it with na_context_wake_drain). */
    bool wakes_contexts;

#define NA_OP_MEMBER(ret, name, params) ret(*name) params;
    NA_OPS(NA_OP_MEMBER)
#undef NA_OP_MEMBER
};

/* The type of each op's function, na_ops_NAME_fn: a plugin declares the
 * functions its files share as `na_ops_poll_fn ofi_poll;`, so the parameter
 * list is written once, in NA_OPS. */
#define NA_OP_TYPE(ret, name, params) typedef ret na_ops_##name##_fn params;
NA_OPS(NA_OP_TYPE)
#undef NA_OP_TYPE

/* Plugin area of an op id. */
static inline void *na_op_plugin(na_op_id_t *op)
{
    return op->plugin;
}

/* Op id owning a plugin area. */
static inline na_op_id_t *na_op_from_plugin(void *plugin_area)
{
    return (na_op_id_t *)((char *)plugin_area - offsetof(struct na_op_id, plugin));
}

static inline bool na_op_cancel_requested(na_op_id_t *op)
{
    return atomic_load(&op->state) == NA_OP_CANCELING;
}

/* Report the end of a posted op exactly once; its callback is queued on the
 * op's context with ret. Fill op->info.info first for receives. */
void na_op_complete(na_op_id_t *op, na_return_t ret);

/* Consume the wake-ups of context->wake_fd (a poll_wait that saw it readable). */
void na_context_wake_drain(na_context_t *context);

/* An outside event loop that polls the context's wake fd (-1: none) beside the
 * plugin's fd: between watch_begin and watch_end it counts as a sleeper, so a
 * completion another thread queues on the context writes the fd. watch_begin
 * is false (nothing counted) when a completion is already queued; watch_end
 * drains the fd. */
/* End a wait in NA_Poll_wait on context (now, or the next one if none is
 * under way): the layer above queued work of its own, from another thread,
 * that the thread waiting there must see. */
void na_context_interrupt(na_context_t *context);

int na_context_watch_fd(const na_context_t *context);
bool na_context_watch_begin(na_context_t *context);
void na_context_watch_end(na_context_t *context);

/* Initialize the common head of a new plugin address (refcount 1). */
void na_addr_init(na_class_t *na_class, na_addr_t *addr);
/* Initialize an address the plugin keeps for a peer's lifetime, holding one
 * reference itself (not counted as a user's address): hand out na_addr_ref()
 * of it instead of a new address per message, so the same peer always gives
 * the same pointer and nothing is allocated per receive. */
void na_addr_init_owned(na_class_t *na_class, na_addr_t *addr);
static inline na_addr_t *na_addr_ref(na_addr_t *addr)
{
    /* An owned address counts as one live address while users hold it. */
    if (hgx_int_add(&addr->refcount, 1, addr->na_class->single) == 1 && addr->owned)
        atomic_fetch_add(&addr->na_class->n_addrs, 1);
    return addr;
}

/* Plugin tables built into this library (NULL-terminated). */
extern const struct na_ops *const na_plugin_table[];

/* The index-th parameter the library reads (the core's, then each plugin's)
 * and who reads it ("core" or the plugin's class name); NULL past the last. */
const struct hgx_param *na_param_at(unsigned int index, const char **scope);

/* Each built plugin's table, for the plugin's own files (configure's list). */
#define X(ops) extern const struct na_ops ops;
HGX_NA_PLUGIN_LIST
#undef X

/* True if the plugin of ops serves protocol_name. */
bool na_plugin_has_protocol(const struct na_ops *ops, const char *protocol_name);

#endif /* NA_PLUGIN_H */

/*
 * hg_internal.h -- private structures shared by the HG RPC layer and the bulk layer.
 *
 * The RPC layer sits on the public NA API only. Everything user-visible goes
 * through a per-context completion queue that HG_Trigger() drains, so user
 * callbacks never run from inside progress.
 */
#ifndef HG_INTERNAL_H
#define HG_INTERNAL_H

#include "hg_rpc_map.h"
#include "hgx_atomic.h"
#include "hgx_list.h"
#include "hgx_lock.h"
#include "hgx_log.h"
#include "hgx_test_hooks.h"
#include "mercury.h"
#include "mercury_bulk.h"
#include "na.h"

#include <pthread.h>
#include <stdatomic.h>

/* Unexpected receives each listening context posts first, and adds each
 * time they have all been consumed at once (request_post_init / _incr 0). */
#define HG_POST_POOL_DEFAULT 64
/* Growth (request_post_incr) stops here, so that a flood of requests cannot
 * make a server allocate receive buffers without bound; Mercury has no cap. */
#define HG_POST_POOL_MAX 4096
/* Recent request sources a context keeps wrapped (hg_addr_of_source). */
#define HG_SOURCE_CACHE 16

/* An entry of a context's completion queue: run() is called by HG_Trigger(). */
struct hg_completion {
    struct hg_completion *next;
    void (*run)(struct hg_completion *completion);
};

/* Diagnostic counters of a class (HG_Class_get_counters). */
enum hg_counter {
    HG_COUNT_REQ_SENT,
    HG_COUNT_REQ_RECV,
    HG_COUNT_RESP_SENT,
    HG_COUNT_RESP_RECV,
    HG_COUNT_REQ_EXTRA,
    HG_COUNT_RESP_EXTRA,
    HG_COUNT_REQ_ACTIVE,
    HG_COUNT_BULK,
    HG_COUNT_MAX
};

struct hg_class {
    na_class_t *na_class;
    bool own_na_class; /* created by HG_Init, finalized with it */
    bool listening;
    /* NA_THREAD_MODE_SINGLE in the init info: one thread uses the class and
     * its contexts, so the contexts' locks are off. */
    bool single;
    hg_checksum_level_t checksum_level;
    unsigned int post_count; /* unexpected receives posted per context */
    /* Receives added to a context whose posted receives have all been
     * consumed at once (request_post_incr; 0: the pool never grows). */
    unsigned int post_incr;
    size_t unexpected_size;   /* NA max unexpected size */
    size_t expected_size;     /* NA max expected size */
    size_t unexpected_header; /* NA header bytes of unexpected messages */
    size_t expected_header;   /* NA header bytes of expected messages */
    uint32_t cookie_mask;     /* response tags: largest 2^k - 1 not above NA's max tag */
    atomic_uint cookie_next;  /* source of response tags */
    struct hg_rpc_map *rpc_map;
    atomic_uint rpc_gen;  /* bumped (under lock) by every change of a registration */
    pthread_mutex_t lock; /* guards rpc_map and local_bulks */
    struct hg_bulk *local_bulks; /* live local bulk handles, for self transfers */
    atomic_ullong bulk_id_next;
    void *data;
    void (*data_free)(void *);
    /* Live objects: HG_Finalize refuses while contexts or bulks remain. */
    atomic_long n_contexts, n_addrs, n_bulks;
    /* Live addresses (under addr_lock): HG_Finalize frees those the program
     * forgot; handles forgotten at HG_Context_destroy are counted for its
     * warning. */
    hgx_lock_t addr_lock;
    struct hgx_list addrs; /* every hg_addr of the class (under addr_lock) */
    atomic_long n_forgotten_handles;
    atomic_long n_dropped;   /* malformed / corrupted requests dropped */
    atomic_int corrupt_next; /* test hook: corrupt the next message header sent */
    atomic_long counters[HG_COUNT_MAX];
    /* Bytes reserved before the input / output payload (HG_Class_set_*_offset). */
    size_t in_offset, out_offset;
    bool no_loopback; /* RPCs to self go through NA (init info) */
    bool bulk_eager;  /* small readable bulk data may travel in RPCs (init info) */
    bool stats;       /* print the counters at HG_Finalize (init info) */
    /* Run on every handle HG_Create() or a received request makes. */
    hg_return_t (*handle_create)(hg_handle_t handle, void *arg);
    void *handle_create_arg;
};

struct hg_post;       /* one pre-posted unexpected receive */
struct hg_post_chunk; /* receives added together (the first post_count, each growth) */

struct hg_context {
    hg_class_t *hg_class;
    na_context_t *na_context;
    uint8_t id;
    hgx_lock_t cq_lock; /* the queue, its counters and the handle cache */
    struct hg_completion *cq_head, *cq_tail;
    atomic_uint cq_count;    /* written under cq_lock, read without it */
    unsigned int cq_waiters; /* HG_Trigger calls waiting on cq_cond (under cq_lock) */
    /* HG_Progress calls waiting in NA_Poll_wait: work queued from another
     * thread interrupts their wait (hg_completion_push, progress_wait). */
    atomic_uint poll_sleepers;
    pthread_mutex_t wait_lock; /* held by a waiting HG_Trigger, for cq_cond */
    pthread_cond_t cq_cond;
    _Atomic(struct hg_post_chunk *) post_chunks; /* every receive of the context */
    atomic_uint n_posts;                         /* receives in post_chunks */
    atomic_long n_posted;                        /* posts currently in NA */
    atomic_bool post_grow; /* all were consumed: the next flush adds post_incr */
    _Atomic(struct hg_post *) repost; /* received posts to post again (a stack) */
    atomic_long n_handles;          /* live handles and bulk transfers on this context */
    struct hg_handle *handle_cache; /* released target handles (under cq_lock) */
    struct hgx_list live;           /* handles not released yet (under cq_lock) */
    /* sources of recent requests, direct-mapped by NA address (one reference each) */
    _Atomic(hg_addr_t) sources[HG_SOURCE_CACHE];
    unsigned int handle_cache_n;
    unsigned int handle_cache_cap; /* most handles kept (under cq_lock) */
    struct hg_rpc_info rpc_last;   /* registration of the last request (under cq_lock) */
    unsigned int rpc_last_gen;     /* hg_class->rpc_gen it was read at */
    bool rpc_last_ok;
    bool unposting;
    /* Events API (hg_event.c): the wait fd (-1 until HG_Event_get_wait_fd),
     * the eventfd written for work queued while the event loop sleeps
     * (ev_armed, under cq_lock), and whether the loop sleeps on it. */
    atomic_int ev_epfd;
    int ev_fd;
    bool ev_armed;
    atomic_bool ev_watching;
    void *data;
    void (*data_free)(void *);
};

struct hg_addr {
    hg_class_t *hg_class;
    na_addr_t *na_addr;
    atomic_int refcount;
    bool is_self;
    struct hgx_list link; /* in hg_class->addrs */
};

/* Context completion queue (hg_context.c). */
void hg_completion_push(hg_context_t *context, struct hg_completion *completion);
/* Completions queued (read without the lock). */
unsigned int hg_completion_count(hg_context_t *context);
/* Post again the receives handed back by handled requests, after adding
 * post_incr new ones if they had all been consumed at once. */
void hg_posts_flush(hg_context_t *context);

/* Events API state of a context (hg_event.c): wake the sleeping event loop;
 * release the wait fd. */
void hg_event_signal(hg_context_t *context);
void hg_event_fini(hg_context_t *context);

/* Wrap an NA address (ownership of the NA reference moves to the result). */
hg_addr_t hg_addr_wrap(hg_class_t *hg_class, na_addr_t *na_addr);
/* The HG address of a request's NA source (consumed): a new reference. */
hg_addr_t hg_addr_of_source(hg_context_t *context, na_addr_t *source);
/* Drop the context's cached source address. */
void hg_addr_source_forget(hg_context_t *context);
/* Free every address still alive (HG_Finalize); returns how many. */
long hg_addr_free_all(hg_class_t *hg_class);

/* Internal bulk transfer: done() runs from progress (not from HG_Trigger). */
typedef void (*hg_bulk_done_cb_t)(void *arg, hg_return_t ret);
hg_return_t hg_bulk_transfer_internal(hg_context_t *context, hg_bulk_done_cb_t done,
                                      void *arg, hg_bulk_op_t op, hg_addr_t origin_addr,
                                      uint8_t origin_id, hg_bulk_t origin_handle,
                                      hg_size_t origin_offset, hg_bulk_t local_handle,
                                      hg_size_t local_offset, hg_size_t size,
                                      hg_op_id_t *op_id);

/* True once after the hook was set; a plain load while it is not. */
static inline bool hg_corrupt_next_take(hg_class_t *hg_class)
{
    return atomic_load_explicit(&hg_class->corrupt_next, memory_order_relaxed) &&
           atomic_exchange(&hg_class->corrupt_next, 0);
}

/* Track live classes for HG_Diag_dump_counters (hg_diag.c). */
void hg_diag_register(hg_class_t *hg_class);
void hg_diag_deregister(hg_class_t *hg_class);
/* Log the class's counters. */
void hg_diag_print(hg_class_t *hg_class);

/* Add delta to a diagnostic counter. */
static inline void hg_count(hg_class_t *hg_class, enum hg_counter counter, long delta)
{
    hgx_long_add(&hg_class->counters[counter], delta, hg_class->single);
}

/* Map an NA return code to its HG counterpart. */
hg_return_t hg_ret_from_na(na_return_t ret);

#endif /* HG_INTERNAL_H */

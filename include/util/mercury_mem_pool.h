/**
 * @file mercury_mem_pool.h
 * Mercury's memory pool (hg_mem_pool_*): fixed-size chunks carved from
 * blocks of page-aligned memory, each block optionally registered (e.g. with
 * a network) through the caller's functions. When every chunk is taken, the
 * pool grows by one block. Thread-safe; inline over a mutex.
 */
#ifndef MERCURY_MEM_POOL_H
#define MERCURY_MEM_POOL_H

#include "mercury_util_config.h"

#include "mercury_mem.h"
#include "mercury_thread_mutex.h"

#include <stdint.h>
#include <stdlib.h>

/**
 * Register a block.
 * \param buf [IN] the block
 * \param size [IN] its size
 * \param flags [IN] the flags given to hg_mem_pool_create()
 * \param handle [OUT] what hg_mem_pool_alloc() gives for chunks of this block
 * \param arg [IN/OUT] the arg given to hg_mem_pool_create()
 * \return HG_UTIL_SUCCESS, or an error (the block is not added)
 */
typedef int (*hg_mem_pool_register_func_t)(const void *buf, size_t size,
                                           unsigned long flags, void **handle, void *arg);

/**
 * Deregister a block (called for a non-NULL handle as the pool is destroyed).
 * \return HG_UTIL_SUCCESS or an error
 */
typedef int (*hg_mem_pool_deregister_func_t)(void *handle, void *arg);

/** A block: its memory, its registration, and a stack of its free chunks. */
struct hg_mem_pool_block {
    struct hg_mem_pool_block *next;
    char *buf;
    void *mr_handle;
    size_t nfree;
    size_t free_idx[]; /**< indices of the free chunks */
};

/** A pool; create with hg_mem_pool_create(). */
struct hg_mem_pool {
    hg_thread_mutex_t mutex;
    struct hg_mem_pool_block *blocks;
    hg_mem_pool_register_func_t register_func;
    hg_mem_pool_deregister_func_t deregister_func;
    unsigned long flags;
    void *arg;
    size_t chunk_size;
    size_t chunk_count;
};

/* Allocate (and register) one block of the pool; NULL on failure. */
static HG_UTIL_INLINE struct hg_mem_pool_block *
hg_mem_pool_block_new_(struct hg_mem_pool *p)
{
    struct hg_mem_pool_block *b = (struct hg_mem_pool_block *)malloc(
        sizeof(*b) + p->chunk_count * sizeof(b->free_idx[0]));
    if (!b)
        return NULL;
    size_t page = (size_t)hg_mem_get_page_size();
    size_t len = p->chunk_size * p->chunk_count;
    b->buf = (char *)hg_mem_aligned_alloc(page, (len + page - 1) / page * page);
    b->mr_handle = NULL;
    if (!b->buf ||
        (p->register_func && p->register_func(b->buf, len, p->flags, &b->mr_handle,
                                              p->arg) != HG_UTIL_SUCCESS)) {
        hg_mem_aligned_free(b->buf);
        free(b);
        return NULL;
    }
    /* Hand out the lowest addresses first. */
    for (size_t i = 0; i < p->chunk_count; i++)
        b->free_idx[i] = p->chunk_count - 1 - i;
    b->nfree = p->chunk_count;
    b->next = NULL;
    return b;
}

/* Deregister and free one block. */
static HG_UTIL_INLINE void hg_mem_pool_block_free_(struct hg_mem_pool *p,
                                                   struct hg_mem_pool_block *b)
{
    if (b->mr_handle && p->deregister_func)
        (void)p->deregister_func(b->mr_handle, p->arg);
    hg_mem_aligned_free(b->buf);
    free(b);
}

/**
 * Destroy a pool: deregister and free every block (chunks still held become
 * invalid).
 * \param hg_mem_pool [IN] the pool, or NULL
 */
static HG_UTIL_INLINE void hg_mem_pool_destroy(struct hg_mem_pool *hg_mem_pool)
{
    if (!hg_mem_pool)
        return;
    while (hg_mem_pool->blocks) {
        struct hg_mem_pool_block *b = hg_mem_pool->blocks;
        hg_mem_pool->blocks = b->next;
        hg_mem_pool_block_free_(hg_mem_pool, b);
    }
    hg_thread_mutex_destroy(&hg_mem_pool->mutex);
    free(hg_mem_pool);
}

/**
 * Create a pool of @p block_count blocks of @p chunk_count chunks of
 * @p chunk_size bytes, registering each block with @p register_func if given.
 * \param chunk_size [IN] bytes per chunk (the most hg_mem_pool_alloc() gives)
 * \param chunk_count [IN] chunks per block (at least 1)
 * \param block_count [IN] blocks allocated now (more are added on demand)
 * \param register_func [IN] registers each new block, or NULL
 * \param flags [IN] passed to @p register_func
 * \param deregister_func [IN] deregisters each block at destruction, or NULL
 * \param arg [IN/OUT] passed to both functions
 * \return the pool (destroy with hg_mem_pool_destroy()), or NULL
 */
static HG_UTIL_INLINE struct hg_mem_pool *
hg_mem_pool_create(size_t chunk_size, size_t chunk_count, size_t block_count,
                   hg_mem_pool_register_func_t register_func, unsigned long flags,
                   hg_mem_pool_deregister_func_t deregister_func, void *arg)
{
    if (chunk_size == 0 || chunk_count == 0)
        return NULL;
    struct hg_mem_pool *p = (struct hg_mem_pool *)calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    if (hg_thread_mutex_init(&p->mutex) != HG_UTIL_SUCCESS) {
        free(p);
        return NULL;
    }
    p->register_func = register_func;
    p->deregister_func = deregister_func;
    p->flags = flags;
    p->arg = arg;
    p->chunk_size = chunk_size;
    p->chunk_count = chunk_count;
    for (size_t i = 0; i < block_count; i++) {
        struct hg_mem_pool_block *b = hg_mem_pool_block_new_(p);
        if (!b) {
            hg_mem_pool_destroy(p);
            return NULL;
        }
        b->next = p->blocks;
        p->blocks = b;
    }
    return p;
}

/**
 * Take a chunk of at least @p size bytes, adding a block if none is free.
 * \param hg_mem_pool [IN/OUT] the pool
 * \param size [IN] bytes needed (at most the chunk size)
 * \param mr_handle [OUT] the registration handle of the chunk's block (required
 *        when the pool registers its blocks, else may be NULL)
 * \return the chunk (give it back with hg_mem_pool_free()), or NULL
 */
static HG_UTIL_INLINE void *hg_mem_pool_alloc(struct hg_mem_pool *hg_mem_pool,
                                              size_t size, void **mr_handle)
{
    struct hg_mem_pool *p = hg_mem_pool;
    if (size > p->chunk_size || (p->register_func && !mr_handle))
        return NULL;
    hg_thread_mutex_lock(&p->mutex);
    struct hg_mem_pool_block *b = p->blocks;
    while (b && b->nfree == 0)
        b = b->next;
    if (!b) {
        b = hg_mem_pool_block_new_(p);
        if (!b) {
            hg_thread_mutex_unlock(&p->mutex);
            return NULL;
        }
        b->next = p->blocks;
        p->blocks = b;
    }
    char *chunk = b->buf + b->free_idx[--b->nfree] * p->chunk_size;
    if (mr_handle)
        *mr_handle = b->mr_handle;
    hg_thread_mutex_unlock(&p->mutex);
    return chunk;
}

/* Block holding @p mem_ptr, NULL if none (call with the mutex held). */
static HG_UTIL_INLINE struct hg_mem_pool_block *hg_mem_pool_find_(struct hg_mem_pool *p,
                                                                  const void *mem_ptr)
{
    uintptr_t a = (uintptr_t)mem_ptr;
    for (struct hg_mem_pool_block *b = p->blocks; b; b = b->next)
        if (a >= (uintptr_t)b->buf &&
            a < (uintptr_t)b->buf + p->chunk_size * p->chunk_count)
            return b;
    return NULL;
}

/**
 * Give back a chunk from hg_mem_pool_alloc().
 * \param hg_mem_pool [IN/OUT] the pool
 * \param mem_ptr [IN] the chunk, or NULL (a pointer not from the pool is ignored)
 * \param mr_handle [IN] the handle hg_mem_pool_alloc() gave (unused: the
 *        chunk's address names its block)
 */
static HG_UTIL_INLINE void hg_mem_pool_free(struct hg_mem_pool *hg_mem_pool,
                                            void *mem_ptr, void *mr_handle)
{
    (void)mr_handle;
    if (!mem_ptr)
        return;
    hg_thread_mutex_lock(&hg_mem_pool->mutex);
    struct hg_mem_pool_block *b = hg_mem_pool_find_(hg_mem_pool, mem_ptr);
    if (b && b->nfree < hg_mem_pool->chunk_count)
        b->free_idx[b->nfree++] =
            (size_t)((char *)mem_ptr - b->buf) / hg_mem_pool->chunk_size;
    hg_thread_mutex_unlock(&hg_mem_pool->mutex);
}

/**
 * Offset of a chunk from the start of its registered block.
 * \param hg_mem_pool [IN/OUT] the pool
 * \param mem_ptr [IN] the chunk
 * \param mr_handle [IN] its handle (unused, as in hg_mem_pool_free())
 * \return the offset, or 0 if @p mem_ptr is not in the pool
 */
static HG_UTIL_INLINE size_t hg_mem_pool_chunk_offset(struct hg_mem_pool *hg_mem_pool,
                                                      void *mem_ptr, void *mr_handle)
{
    (void)mr_handle;
    hg_thread_mutex_lock(&hg_mem_pool->mutex);
    struct hg_mem_pool_block *b = hg_mem_pool_find_(hg_mem_pool, mem_ptr);
    size_t off = b ? (size_t)((char *)mem_ptr - b->buf) : 0;
    hg_thread_mutex_unlock(&hg_mem_pool->mutex);
    return off;
}

#endif /* MERCURY_MEM_POOL_H */

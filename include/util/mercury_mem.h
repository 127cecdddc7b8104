/**
 * @file mercury_mem.h
 * Mercury's memory helpers (hg_mem_*): page size, aligned allocations,
 * allocations with a header before the aligned part, and named shared
 * memory, huge-page memory. Inline over POSIX (sysconf, posix_memalign,
 * shm_open, mmap) and Linux (MAP_HUGETLB, /proc/meminfo).
 */
#ifndef MERCURY_MEM_H
#define MERCURY_MEM_H

#include "mercury_util_config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#if !defined(MAP_HUGETLB) && defined(__linux__)
/* A strict ISO mode hides the Linux mmap flags: take them from the kernel's
 * header, which has each architecture's values. */
#include <linux/mman.h>
#endif

#define HG_MEM_CACHE_LINE_SIZE 64 /**< cache line size assumed for alignment */
#define HG_MEM_PAGE_SIZE 4096 /**< usual page size (hg_mem_get_page_size() is exact) */

/** \return the system page size in bytes, or -1 */
static HG_UTIL_INLINE long hg_mem_get_page_size(void)
{
    return sysconf(_SC_PAGESIZE);
}

/**
 * Default huge page size of the system ("Hugepagesize" of /proc/meminfo).
 * \return the size in bytes, or 0 if unknown
 */
static HG_UTIL_INLINE long hg_mem_get_hugepage_size(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long kb = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Hugepagesize: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb > 0 ? kb * 1024 : 0;
}

/**
 * Map @p size bytes of private memory backed by huge pages. No fallback to
 * normal pages: this fails when the system has no free huge pages
 * (HugePages_Free in /proc/meminfo).
 * \param size [IN] bytes, a multiple of hg_mem_get_hugepage_size()
 * \return the memory (free with hg_mem_huge_free()), or NULL
 */
static HG_UTIL_INLINE void *hg_mem_huge_alloc(size_t size)
{
#ifdef MAP_HUGETLB
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    return p == MAP_FAILED ? NULL : p;
#else
    (void)size;
    return NULL;
#endif
}

/**
 * Unmap memory from hg_mem_huge_alloc().
 * \param mem_ptr [IN] the memory
 * \param size [IN] the size given to hg_mem_huge_alloc()
 * \return HG_UTIL_SUCCESS or HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_mem_huge_free(void *mem_ptr, size_t size)
{
    return munmap(mem_ptr, size) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/**
 * Allocate @p size bytes at an address that is a multiple of @p alignment.
 * \param alignment [IN] a power of two, multiple of sizeof(void *)
 * \param size [IN] bytes
 * \return the memory (free with hg_mem_aligned_free()), or NULL
 */
static HG_UTIL_INLINE void *hg_mem_aligned_alloc(size_t alignment, size_t size)
{
    void *p = NULL;
    return posix_memalign(&p, alignment, size) == 0 ? p : NULL;
}

/**
 * Free memory from hg_mem_aligned_alloc().
 * \param mem_ptr [IN] memory, or NULL
 */
static HG_UTIL_INLINE void hg_mem_aligned_free(void *mem_ptr)
{
    free(mem_ptr);
}

/**
 * Allocate @p size aligned bytes preceded by @p header_size bytes of header.
 * \param header_size [IN] bytes before the returned pointer
 * \param alignment [IN] alignment of the returned pointer (0: none)
 * \param size [IN] bytes after it
 * \return the aligned part (free with hg_mem_header_free()), or NULL
 */
static HG_UTIL_INLINE void *hg_mem_header_alloc(size_t header_size, size_t alignment,
                                                size_t size)
{
    if (alignment == 0) {
        char *p = (char *)malloc(header_size + size);
        return p ? p + header_size : NULL;
    }
    /* Round the header up so that the part after it keeps the alignment. */
    size_t pad = (header_size + alignment - 1) / alignment * alignment;
    char *p = (char *)hg_mem_aligned_alloc(alignment, pad + size);
    return p ? p + pad : NULL;
}

/**
 * Free memory from hg_mem_header_alloc() (same header size and alignment).
 * \param header_size [IN] as given to hg_mem_header_alloc()
 * \param alignment [IN] as given to hg_mem_header_alloc()
 * \param mem_ptr [IN] the pointer it returned, or NULL
 */
static HG_UTIL_INLINE void hg_mem_header_free(size_t header_size, size_t alignment,
                                              void *mem_ptr)
{
    if (!mem_ptr)
        return;
    size_t pad = alignment == 0 ? header_size
                                : (header_size + alignment - 1) / alignment * alignment;
    free((char *)mem_ptr - pad);
}

/**
 * Map @p size bytes of the shared memory object @p name ("/name").
 * \param name [IN] object name
 * \param size [IN] bytes (the object is sized to it when created)
 * \param create [IN] create the object if it does not exist
 * \return the mapping, or NULL
 */
static HG_UTIL_INLINE void *hg_mem_shm_map(const char *name, size_t size, bool create)
{
    int fd = shm_open(name, O_RDWR | (create ? O_CREAT : 0), 0600);
    if (fd < 0)
        return NULL;
    if (create && ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        return NULL;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

/**
 * Unmap a region from hg_mem_shm_map() and remove the object @p name.
 * \param name [IN] object name, or NULL to keep the object
 * \param mem_ptr [IN] mapping
 * \param size [IN] its size
 * \return HG_UTIL_SUCCESS or HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_mem_shm_unmap(const char *name, void *mem_ptr, size_t size)
{
    int rc = munmap(mem_ptr, size);
    if (name && shm_unlink(name) != 0)
        rc = -1;
    return rc == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

#endif /* MERCURY_MEM_H */

/**
 * @file mercury_dl.h
 * Mercury's dynamic loading calls (hg_dl_*): open a shared object, look up a
 * symbol in it, close it, read the last error. Inline over dlopen(3) and
 * friends; hg_dl_get_path reads /proc/self/maps (Linux, as hgx).
 */
#ifndef MERCURY_DL_H
#define MERCURY_DL_H

#include "mercury_util_config.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/** A handle on an opened shared object (dlopen's). */
#define HG_DL_HANDLE void *

/**
 * Describe the last failure of hg_dl_open, hg_dl_sym or hg_dl_close, and clear it.
 * \return a message, or NULL if nothing failed since the last call
 */
static HG_UTIL_INLINE const char *hg_dl_error(void)
{
    return dlerror();
}

/**
 * Open the shared object @p file (symbols bound lazily, kept local).
 * \param file [IN] library name or path (searched as dlopen does)
 * \return a handle, or NULL on failure (see hg_dl_error())
 */
static HG_UTIL_INLINE HG_DL_HANDLE hg_dl_open(const char *file)
{
    return dlopen(file, RTLD_LAZY);
}

/**
 * Close a shared object opened with hg_dl_open().
 * \param handle [IN] handle
 * \return 0 on success, non-zero on failure (see hg_dl_error())
 */
static HG_UTIL_INLINE int hg_dl_close(HG_DL_HANDLE handle)
{
    return dlclose(handle);
}

/**
 * Address of the symbol @p name in a shared object.
 * \param handle [IN] handle from hg_dl_open()
 * \param name [IN] symbol name
 * \return its address, or NULL if not found (see hg_dl_error())
 */
static HG_UTIL_INLINE void *hg_dl_sym(HG_DL_HANDLE handle, const char *name)
{
    return dlsym(handle, name);
}

/**
 * Path of the file mapped at @p addr (e.g. the library a function comes from).
 * \param addr [IN] an address inside a mapped file
 * \param path [OUT] buffer for the path
 * \param path_size [IN] its size
 * \return HG_UTIL_SUCCESS, or HG_UTIL_FAIL if no file is mapped there or the
 *         path does not fit
 */
static HG_UTIL_INLINE int hg_dl_get_path(const void *addr, char *path, size_t path_size)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    uintptr_t a = (uintptr_t)addr;
    char line[4096 + 128];
    int rc = HG_UTIL_FAIL;

    if (!maps || !path || path_size == 0) {
        if (maps)
            fclose(maps);
        return HG_UTIL_FAIL;
    }
    /* Lines: "start-end perms offset dev inode   path". */
    while (fgets(line, sizeof(line), maps)) {
        unsigned long lo, hi;
        int at = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) < 2 || at == 0)
            continue;
        if (a < (uintptr_t)lo || a >= (uintptr_t)hi)
            continue;
        size_t len = strcspn(line + at, "\n");
        if (len > 0 && line[at] == '/' && len < path_size) {
            memcpy(path, line + at, len);
            path[len] = '\0';
            rc = HG_UTIL_SUCCESS;
        }
        break;
    }
    fclose(maps);
    return rc;
}

#endif /* MERCURY_DL_H */

/*
 * hg_rpc_map.h -- registry of RPCs of a class, keyed by 64-bit id (private).
 * Callers hold hg_class->lock around every call.
 */
#ifndef HG_RPC_MAP_H
#define HG_RPC_MAP_H

#include "mercury_types.h"

#include <stdbool.h>

/* What a handle needs to know about its RPC (copied out of the map). */
struct hg_rpc_info {
    hg_id_t id;
    hg_proc_cb_t in_proc;
    hg_proc_cb_t out_proc;
    hg_rpc_cb_t rpc_cb;
    bool no_response;
};

struct hg_rpc_entry {
    struct hg_rpc_entry *next;
    struct hg_rpc_info info;
    void *data;
    void (*data_free)(void *);
};

struct hg_rpc_map;

struct hg_rpc_map *hg_rpc_map_create(void);
/* Frees every entry, running data free callbacks. */
void hg_rpc_map_destroy(struct hg_rpc_map *map);
struct hg_rpc_entry *hg_rpc_map_find(struct hg_rpc_map *map, hg_id_t id);
/* Insert or update id's procs. \return the entry, NULL if out of memory */
struct hg_rpc_entry *hg_rpc_map_set(struct hg_rpc_map *map, hg_id_t id,
                                    hg_proc_cb_t in_proc, hg_proc_cb_t out_proc,
                                    hg_rpc_cb_t rpc_cb);
/* \return false if id was not registered */
bool hg_rpc_map_remove(struct hg_rpc_map *map, hg_id_t id);

#endif /* HG_RPC_MAP_H */

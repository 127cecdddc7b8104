/*
 * hg_rpc_map.c -- RPC registry: a fixed-size chained hash table on the id.
 */
#include "hg_rpc_map.h"

#include <stdlib.h>

#define HG_RPC_MAP_BUCKETS 256

struct hg_rpc_map {
    struct hg_rpc_entry *buckets[HG_RPC_MAP_BUCKETS];
};

static struct hg_rpc_entry **bucket_of(struct hg_rpc_map *map, hg_id_t id)
{
    return &map->buckets[(id ^ (id >> 32) ^ (id >> 16)) % HG_RPC_MAP_BUCKETS];
}

struct hg_rpc_map *hg_rpc_map_create(void)
{
    return calloc(1, sizeof(struct hg_rpc_map));
}

static void entry_free(struct hg_rpc_entry *entry)
{
    if (entry->data_free)
        entry->data_free(entry->data);
    free(entry);
}

void hg_rpc_map_destroy(struct hg_rpc_map *map)
{
    if (!map)
        return;
    for (size_t i = 0; i < HG_RPC_MAP_BUCKETS; i++) {
        struct hg_rpc_entry *e = map->buckets[i];
        while (e) {
            struct hg_rpc_entry *next = e->next;
            entry_free(e);
            e = next;
        }
    }
    free(map);
}

struct hg_rpc_entry *hg_rpc_map_find(struct hg_rpc_map *map, hg_id_t id)
{
    for (struct hg_rpc_entry *e = *bucket_of(map, id); e; e = e->next)
        if (e->info.id == id)
            return e;
    return NULL;
}

struct hg_rpc_entry *hg_rpc_map_set(struct hg_rpc_map *map, hg_id_t id,
                                    hg_proc_cb_t in_proc, hg_proc_cb_t out_proc,
                                    hg_rpc_cb_t rpc_cb)
{
    struct hg_rpc_entry *e = hg_rpc_map_find(map, id);

    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e)
            return NULL;
        struct hg_rpc_entry **b = bucket_of(map, id);
        e->info.id = id;
        e->next = *b;
        *b = e;
    }
    e->info.in_proc = in_proc;
    e->info.out_proc = out_proc;
    e->info.rpc_cb = rpc_cb;
    return e;
}

bool hg_rpc_map_remove(struct hg_rpc_map *map, hg_id_t id)
{
    for (struct hg_rpc_entry **pp = bucket_of(map, id); *pp; pp = &(*pp)->next) {
        if ((*pp)->info.id == id) {
            struct hg_rpc_entry *e = *pp;
            *pp = e->next;
            entry_free(e);
            return true;
        }
    }
    return false;
}

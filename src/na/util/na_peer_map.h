/*
 * na_peer_map.h -- peers by address key, in a hash table (private).
 *
 * Each unexpected message names its sender by a transport address (a
 * libfabric fi_addr, a UCX worker address, a rank and communicator id); the
 * plugin finds the peer it already knows in constant time rather than by a
 * scan of every peer. Keys are byte strings copied into the map; values are
 * the plugin's peer objects, which the map does not own. The table doubles
 * when it holds more entries than buckets. No locking: the plugin's lock
 * guards it.
 */
#ifndef NA_PEER_MAP_H
#define NA_PEER_MAP_H

#include "na_types.h"

#include <stddef.h>
#include <stdint.h>

struct na_peer_entry;

struct na_peer_map {
    struct na_peer_entry **buckets;
    size_t nbuckets; /* a power of two, or 0 before the first insert */
    size_t count;
};

/* Empty map (allocates on first insert). */
void na_peer_map_init(struct na_peer_map *map);

/* Free the map's entries and table; the values stay the caller's. */
void na_peer_map_fini(struct na_peer_map *map);

/* Value stored under key, or NULL. */
void *na_peer_map_find(const struct na_peer_map *map, const void *key, size_t key_len);

/* Store value (not NULL) under key. NA_EXIST when key is there already,
 * NA_NOMEM when memory runs out (the map is unchanged). */
na_return_t na_peer_map_insert(struct na_peer_map *map, const void *key, size_t key_len,
                               void *value);

/* Take key out; its value, or NULL when it was not there. */
void *na_peer_map_remove(struct na_peer_map *map, const void *key, size_t key_len);

/* Call fn(value, arg) for every entry, in no particular order; fn must not
 * change the map. */
void na_peer_map_for_each(const struct na_peer_map *map,
                          void (*fn)(void *value, void *arg), void *arg);

#endif /* NA_PEER_MAP_H */

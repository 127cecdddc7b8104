/*
 * na_peer_map.c -- chained hash table of peers (na_peer_map.h).
 */
#include "na_peer_map.h"
#include "hgx_assert.h"

#include <stdlib.h>
#include <string.h>

#define NA_PEER_MAP_MIN_BUCKETS 16u

struct na_peer_entry {
    struct na_peer_entry *next;
    uint64_t hash;
    void *value;
    size_t key_len;
    unsigned char key[];
};

/* FNV-1a: keys are short and the plugin's own (not chosen by a peer to
 * collide: a peer picks at most its own address). */
static uint64_t na_peer_hash(const void *key, size_t key_len)
{
    const unsigned char *p = key;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < key_len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void na_peer_map_init(struct na_peer_map *map)
{
    map->buckets = NULL;
    map->nbuckets = 0;
    map->count = 0;
}

void na_peer_map_fini(struct na_peer_map *map)
{
    for (size_t b = 0; b < map->nbuckets; b++)
        for (struct na_peer_entry *e = map->buckets[b], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    free(map->buckets);
    na_peer_map_init(map);
}

static struct na_peer_entry **na_peer_slot(const struct na_peer_map *map, const void *key,
                                           size_t key_len, uint64_t hash)
{
    struct na_peer_entry **slot = &map->buckets[hash & (map->nbuckets - 1)];
    for (; *slot; slot = &(*slot)->next)
        if ((*slot)->hash == hash && (*slot)->key_len == key_len &&
            memcmp((*slot)->key, key, key_len) == 0)
            break;
    return slot;
}

void *na_peer_map_find(const struct na_peer_map *map, const void *key, size_t key_len)
{
    if (map->count == 0)
        return NULL;
    struct na_peer_entry *e =
        *na_peer_slot(map, key, key_len, na_peer_hash(key, key_len));
    return e ? e->value : NULL;
}

/* Double the table (or create it); false when memory runs out. */
static bool na_peer_map_grow(struct na_peer_map *map)
{
    size_t n = map->nbuckets ? map->nbuckets * 2 : NA_PEER_MAP_MIN_BUCKETS;
    struct na_peer_entry **buckets = calloc(n, sizeof(*buckets));
    if (!buckets)
        return false;
    for (size_t b = 0; b < map->nbuckets; b++)
        for (struct na_peer_entry *e = map->buckets[b], *next; e; e = next) {
            next = e->next;
            e->next = buckets[e->hash & (n - 1)];
            buckets[e->hash & (n - 1)] = e;
        }
    free(map->buckets);
    map->buckets = buckets;
    map->nbuckets = n;
    return true;
}

na_return_t na_peer_map_insert(struct na_peer_map *map, const void *key, size_t key_len,
                               void *value)
{
    HGX_ASSERT(value != NULL);
    if (map->count >= map->nbuckets && !na_peer_map_grow(map) && map->nbuckets == 0)
        return NA_NOMEM; /* a full table that cannot grow still takes entries */
    uint64_t hash = na_peer_hash(key, key_len);
    struct na_peer_entry **slot = na_peer_slot(map, key, key_len, hash);
    if (*slot)
        return NA_EXIST;
    struct na_peer_entry *e = malloc(sizeof(*e) + key_len);
    if (!e)
        return NA_NOMEM;
    e->next = NULL;
    e->hash = hash;
    e->value = value;
    e->key_len = key_len;
    memcpy(e->key, key, key_len);
    *slot = e;
    map->count++;
    return NA_SUCCESS;
}

void *na_peer_map_remove(struct na_peer_map *map, const void *key, size_t key_len)
{
    if (map->count == 0)
        return NULL;
    struct na_peer_entry **slot =
        na_peer_slot(map, key, key_len, na_peer_hash(key, key_len));
    struct na_peer_entry *e = *slot;
    if (!e)
        return NULL;
    *slot = e->next;
    void *value = e->value;
    free(e);
    map->count--;
    return value;
}

void na_peer_map_for_each(const struct na_peer_map *map,
                          void (*fn)(void *value, void *arg), void *arg)
{
    for (size_t b = 0; b < map->nbuckets; b++)
        for (const struct na_peer_entry *e = map->buckets[b]; e; e = e->next)
            fn(e->value, arg);
}

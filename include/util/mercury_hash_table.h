/**
 * @file mercury_hash_table.h
 * Mercury's hash table (hg_hash_table_*): pointer values addressed by
 * pointer keys, with the caller's hash and equality functions and optional
 * functions that free keys and values as entries leave the table. Inline:
 * chained buckets, a power-of-two bucket count that doubles as the table
 * fills. Not thread-safe.
 */
#ifndef MERCURY_HASH_TABLE_H
#define MERCURY_HASH_TABLE_H

#include "mercury_util_config.h"

#include <stdlib.h>

typedef void *hg_hash_table_key_t;   /**< a key */
typedef void *hg_hash_table_value_t; /**< a value */
/** What lookups and iterators return when there is no value. */
#define HG_HASH_TABLE_NULL ((void *)0)

/** Hash of a key. */
typedef unsigned int (*hg_hash_table_hash_func_t)(hg_hash_table_key_t value);
/** Non-zero when two keys are equal. */
typedef int (*hg_hash_table_equal_func_t)(hg_hash_table_key_t value1,
                                          hg_hash_table_key_t value2);
/** Frees a key leaving the table. */
typedef void (*hg_hash_table_key_free_func_t)(hg_hash_table_key_t value);
/** Frees a value leaving the table. */
typedef void (*hg_hash_table_value_free_func_t)(hg_hash_table_value_t value);

typedef struct hg_hash_table_entry hg_hash_table_entry_t; /**< an entry */
/** An entry: a key, its value, the next entry of its bucket. */
struct hg_hash_table_entry {
    hg_hash_table_key_t key;
    hg_hash_table_value_t value;
    hg_hash_table_entry_t *next;
};

typedef struct hg_hash_table hg_hash_table_t; /**< a table */
/** A table; create with hg_hash_table_new(). */
struct hg_hash_table {
    hg_hash_table_entry_t **buckets;
    unsigned int nbuckets; /**< a power of two */
    unsigned int nentries;
    hg_hash_table_hash_func_t hash;
    hg_hash_table_equal_func_t equal;
    hg_hash_table_key_free_func_t key_free;
    hg_hash_table_value_free_func_t value_free;
};

typedef struct hg_hash_table_iter hg_hash_table_iter_t; /**< an iterator */
/** An iterator over the values of a table (set by hg_hash_table_iterate()). */
struct hg_hash_table_iter {
    hg_hash_table_t *hash_table;
    hg_hash_table_entry_t *next_entry; /**< what iter_next returns, NULL at the end */
    unsigned int next_chain;           /**< bucket of next_entry */
};

/**
 * Create an empty table.
 * \param hash_func [IN] hash of a key
 * \param equal_func [IN] key equality
 * \return the table (destroy with hg_hash_table_free()), or NULL
 */
static HG_UTIL_INLINE hg_hash_table_t *
hg_hash_table_new(hg_hash_table_hash_func_t hash_func,
                  hg_hash_table_equal_func_t equal_func)
{
    hg_hash_table_t *t = (hg_hash_table_t *)calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->nbuckets = 16;
    t->buckets = (hg_hash_table_entry_t **)calloc(t->nbuckets, sizeof(*t->buckets));
    if (!t->buckets) {
        free(t);
        return NULL;
    }
    t->hash = hash_func;
    t->equal = equal_func;
    return t;
}

/* Release an entry that leaves the table, with the registered functions. */
static HG_UTIL_INLINE void hg_hash_table_drop_(hg_hash_table_t *t,
                                               hg_hash_table_entry_t *e)
{
    if (t->key_free)
        t->key_free(e->key);
    if (t->value_free)
        t->value_free(e->value);
    free(e);
}

/**
 * Destroy a table, freeing each key and value with the registered functions.
 * \param hash_table [IN] the table, or NULL
 */
static HG_UTIL_INLINE void hg_hash_table_free(hg_hash_table_t *hash_table)
{
    if (!hash_table)
        return;
    for (unsigned int b = 0; b < hash_table->nbuckets; b++) {
        hg_hash_table_entry_t *e = hash_table->buckets[b];
        while (e) {
            hg_hash_table_entry_t *next = e->next;
            hg_hash_table_drop_(hash_table, e);
            e = next;
        }
    }
    free(hash_table->buckets);
    free(hash_table);
}

/**
 * Set the functions that free keys and values when their entry is removed,
 * replaced, or the table freed (NULL: leave them alone).
 */
static HG_UTIL_INLINE void
hg_hash_table_register_free_functions(hg_hash_table_t *hash_table,
                                      hg_hash_table_key_free_func_t key_free_func,
                                      hg_hash_table_value_free_func_t value_free_func)
{
    hash_table->key_free = key_free_func;
    hash_table->value_free = value_free_func;
}

/* Bucket of @p key. */
static HG_UTIL_INLINE hg_hash_table_entry_t **
hg_hash_table_bucket_(hg_hash_table_t *t, hg_hash_table_key_t key)
{
    return &t->buckets[t->hash(key) & (t->nbuckets - 1)];
}

/* Double the bucket count; on allocation failure the table stays as it is. */
static HG_UTIL_INLINE void hg_hash_table_grow_(hg_hash_table_t *t)
{
    unsigned int n = t->nbuckets * 2;
    hg_hash_table_entry_t **nb = (hg_hash_table_entry_t **)calloc(n, sizeof(*nb));
    if (!nb)
        return;
    for (unsigned int b = 0; b < t->nbuckets; b++) {
        hg_hash_table_entry_t *e = t->buckets[b];
        while (e) {
            hg_hash_table_entry_t *next = e->next;
            hg_hash_table_entry_t **dst = &nb[t->hash(e->key) & (n - 1)];
            e->next = *dst;
            *dst = e;
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = nb;
    t->nbuckets = n;
}

/**
 * Insert @p value under @p key. If an equal key is there, its entry takes the
 * new key and value, and the old ones are freed with the registered functions
 * (unless they are the very pointers inserted).
 * \return 1 on success, 0 if memory ran out
 */
static HG_UTIL_INLINE int hg_hash_table_insert(hg_hash_table_t *hash_table,
                                               hg_hash_table_key_t key,
                                               hg_hash_table_value_t value)
{
    hg_hash_table_t *t = hash_table;
    for (hg_hash_table_entry_t *e = *hg_hash_table_bucket_(t, key); e; e = e->next) {
        if (t->equal(e->key, key)) {
            if (t->key_free && e->key != key)
                t->key_free(e->key);
            if (t->value_free && e->value != value)
                t->value_free(e->value);
            e->key = key;
            e->value = value;
            return 1;
        }
    }
    if (t->nentries >= t->nbuckets / 4 * 3)
        hg_hash_table_grow_(t);
    hg_hash_table_entry_t *e = (hg_hash_table_entry_t *)malloc(sizeof(*e));
    if (!e)
        return 0;
    hg_hash_table_entry_t **b = hg_hash_table_bucket_(t, key);
    e->key = key;
    e->value = value;
    e->next = *b;
    *b = e;
    t->nentries++;
    return 1;
}

/**
 * Value stored under @p key.
 * \return the value, or HG_HASH_TABLE_NULL if no equal key is in the table
 */
static HG_UTIL_INLINE hg_hash_table_value_t
hg_hash_table_lookup(hg_hash_table_t *hash_table, hg_hash_table_key_t key)
{
    for (hg_hash_table_entry_t *e = *hg_hash_table_bucket_(hash_table, key); e;
         e = e->next)
        if (hash_table->equal(e->key, key))
            return e->value;
    return HG_HASH_TABLE_NULL;
}

/**
 * Remove the entry of @p key, freeing its key and value with the registered
 * functions.
 * \return 1 if removed, 0 if no equal key is in the table
 */
static HG_UTIL_INLINE int hg_hash_table_remove(hg_hash_table_t *hash_table,
                                               hg_hash_table_key_t key)
{
    for (hg_hash_table_entry_t **p = hg_hash_table_bucket_(hash_table, key); *p;
         p = &(*p)->next) {
        hg_hash_table_entry_t *e = *p;
        if (hash_table->equal(e->key, key)) {
            *p = e->next;
            hash_table->nentries--;
            hg_hash_table_drop_(hash_table, e);
            return 1;
        }
    }
    return 0;
}

/** \return the number of entries */
static HG_UTIL_INLINE unsigned int hg_hash_table_num_entries(hg_hash_table_t *hash_table)
{
    return hash_table->nentries;
}

/* Point @p iter at the first entry of bucket @p from or after it. */
static HG_UTIL_INLINE void hg_hash_table_seek_(hg_hash_table_iter_t *iter,
                                               unsigned int from)
{
    hg_hash_table_t *t = iter->hash_table;
    iter->next_entry = NULL;
    for (unsigned int b = from; b < t->nbuckets; b++) {
        if (t->buckets[b]) {
            iter->next_entry = t->buckets[b];
            iter->next_chain = b;
            return;
        }
    }
    iter->next_chain = t->nbuckets;
}

/**
 * Start iterating over the values of @p hash_table (in no particular order).
 * The table must not change while the iterator is used.
 */
static HG_UTIL_INLINE void hg_hash_table_iterate(hg_hash_table_t *hash_table,
                                                 hg_hash_table_iter_t *iter)
{
    iter->hash_table = hash_table;
    hg_hash_table_seek_(iter, 0);
}

/** \return non-zero while hg_hash_table_iter_next() has a value to return */
static HG_UTIL_INLINE int hg_hash_table_iter_has_more(hg_hash_table_iter_t *iterator)
{
    return iterator->next_entry != NULL;
}

/**
 * Next value of the iteration.
 * \return the value, or HG_HASH_TABLE_NULL when there is none left
 */
static HG_UTIL_INLINE hg_hash_table_value_t
hg_hash_table_iter_next(hg_hash_table_iter_t *iterator)
{
    hg_hash_table_entry_t *e = iterator->next_entry;
    if (!e)
        return HG_HASH_TABLE_NULL;
    if (e->next)
        iterator->next_entry = e->next;
    else
        hg_hash_table_seek_(iterator, iterator->next_chain + 1);
    return e->value;
}

#endif /* MERCURY_HASH_TABLE_H */

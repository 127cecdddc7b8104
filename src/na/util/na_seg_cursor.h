/*
 * na_seg_cursor.h -- walk a local and a remote segment list side by side
 * (private).
 *
 * A put or get of `size` bytes from an offset into a local handle to an
 * offset into a remote one covers runs of bytes that are contiguous on both
 * sides; each run is one transport operation. The cursor yields those runs in
 * order: the segment index and the offset inside that segment on each side,
 * and the run's length. Plugins keep segments in their own structs (a local
 * pointer, a remote 64-bit address, a key...), so a list is described by its
 * array, count, element size and the place of the length member.
 */
#ifndef NA_SEG_CURSOR_H
#define NA_SEG_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A plugin's segment array: the cursor reads only each element's length. */
struct na_seg_list {
    const void *segs;
    size_t count;
    size_t stride;     /* sizeof one element */
    size_t len_offset; /* offsetof the length member */
    size_t len_size;   /* sizeof the length member: 4 or 8 */
};

/* Describe array[0..n) whose length member is len_member. */
#define NA_SEG_LIST(array, n, len_member)                                                \
    ((struct na_seg_list){(array), (n), sizeof(*(array)),                                \
                          offsetof(__typeof__(*(array)), len_member),                    \
                          sizeof((array)->len_member)})

/* One run contiguous on both sides. */
struct na_seg_run {
    size_t local_index, remote_index;     /* segments */
    uint64_t local_offset, remote_offset; /* byte offsets inside them */
    size_t len;
};

struct na_seg_cursor {
    struct na_seg_list local, remote;
    size_t li, ri;       /* current segments */
    uint64_t lpos, rpos; /* offsets inside them */
    uint64_t left;       /* bytes not yet yielded */
};

/* Place the cursor at local_offset and remote_offset (bytes from the start of
 * each whole list) for size bytes. False when either list holds fewer than
 * offset + size bytes: the caller's bounds check missed something. */
bool na_seg_cursor_init(struct na_seg_cursor *cur, struct na_seg_list local,
                        uint64_t local_offset, struct na_seg_list remote,
                        uint64_t remote_offset, uint64_t size);

/* The next run; false once all size bytes were yielded. */
bool na_seg_cursor_next(struct na_seg_cursor *cur, struct na_seg_run *run);

/* The next run, cut to at most max (> 0) bytes, for a transport operation
 * that carries several runs up to a size limit; the rest of a cut run comes
 * next. False once all size bytes were yielded. */
bool na_seg_cursor_next_max(struct na_seg_cursor *cur, uint64_t max,
                            struct na_seg_run *run);

/* Runs a transfer of this shape takes (what the plugin must post). */
size_t na_seg_cursor_count(const struct na_seg_cursor *cur);

#endif /* NA_SEG_CURSOR_H */

/*
 * na_seg_cursor.c -- runs of a put/get over two segment lists (na_seg_cursor.h).
 */
#include "na_seg_cursor.h"
#include "hgx_assert.h"

#include <string.h>

static uint64_t na_seg_len(const struct na_seg_list *list, size_t i)
{
    const unsigned char *elem = (const unsigned char *)list->segs + i * list->stride;
    if (list->len_size == sizeof(uint32_t)) {
        uint32_t len;
        memcpy(&len, elem + list->len_offset, sizeof(len));
        return len;
    }
    uint64_t len;
    HGX_ASSERT(list->len_size == sizeof(len));
    memcpy(&len, elem + list->len_offset, sizeof(len));
    return len;
}

/* Find the segment holding byte `offset` of the list, or the end of the list
 * when offset is its total length. False when the list is shorter than need
 * bytes from offset. */
static bool na_seg_seek(const struct na_seg_list *list, uint64_t offset, uint64_t need,
                        size_t *index, uint64_t *pos)
{
    size_t i = 0;
    uint64_t total = 0;
    /* Skip whole segments before offset (and empty ones at it). */
    while (i < list->count && offset >= na_seg_len(list, i)) {
        offset -= na_seg_len(list, i);
        i++;
    }
    *index = i;
    *pos = offset;
    if (i == list->count)
        return offset == 0 && need == 0;
    for (size_t j = i; j < list->count && total < offset + need; j++) {
        uint64_t len = na_seg_len(list, j);
        if (len > UINT64_MAX - total)
            return true; /* more bytes than any need */
        total += len;
    }
    return total >= offset + need;
}

bool na_seg_cursor_init(struct na_seg_cursor *cur, struct na_seg_list local,
                        uint64_t local_offset, struct na_seg_list remote,
                        uint64_t remote_offset, uint64_t size)
{
    memset(cur, 0, sizeof(*cur));
    cur->local = local;
    cur->remote = remote;
    if (size > UINT64_MAX - local_offset || size > UINT64_MAX - remote_offset)
        return false;
    if (!na_seg_seek(&local, local_offset, size, &cur->li, &cur->lpos) ||
        !na_seg_seek(&remote, remote_offset, size, &cur->ri, &cur->rpos))
        return false;
    cur->left = size;
    return true;
}

/* Step past segments that are used up (or empty). */
static void na_seg_skip_full(const struct na_seg_list *list, size_t *index, uint64_t *pos)
{
    while (*index < list->count && *pos >= na_seg_len(list, *index)) {
        *pos -= na_seg_len(list, *index);
        (*index)++;
    }
}

bool na_seg_cursor_next(struct na_seg_cursor *cur, struct na_seg_run *run)
{
    return na_seg_cursor_next_max(cur, UINT64_MAX, run);
}

bool na_seg_cursor_next_max(struct na_seg_cursor *cur, uint64_t max,
                            struct na_seg_run *run)
{
    HGX_ASSERT(max > 0);
    if (cur->left == 0)
        return false;
    na_seg_skip_full(&cur->local, &cur->li, &cur->lpos);
    na_seg_skip_full(&cur->remote, &cur->ri, &cur->rpos);
    /* init checked that both lists hold `left` more bytes. */
    HGX_ASSERT(cur->li < cur->local.count && cur->ri < cur->remote.count);
    uint64_t len = na_seg_len(&cur->local, cur->li) - cur->lpos;
    uint64_t rlen = na_seg_len(&cur->remote, cur->ri) - cur->rpos;
    if (rlen < len)
        len = rlen;
    if (cur->left < len)
        len = cur->left;
    if (max < len)
        len = max;
    if (len > SIZE_MAX)
        len = SIZE_MAX;
    run->local_index = cur->li;
    run->local_offset = cur->lpos;
    run->remote_index = cur->ri;
    run->remote_offset = cur->rpos;
    run->len = (size_t)len;
    cur->lpos += len;
    cur->rpos += len;
    cur->left -= len;
    return true;
}

size_t na_seg_cursor_count(const struct na_seg_cursor *cur)
{
    struct na_seg_cursor copy = *cur;
    struct na_seg_run run;
    size_t n = 0;
    while (na_seg_cursor_next(&copy, &run))
        n++;
    return n;
}

/*
 * hgx_list.h -- intrusive doubly linked lists (private).
 *
 * An element embeds a struct hgx_list link; a list is a head link whose
 * next/prev close the circle, so insertion and removal never test for the
 * ends and removal needs no list pointer. A removed link points to itself,
 * which makes hgx_list_linked() a cheap membership test and a second
 * removal harmless. Nothing here allocates or locks: the owner's lock
 * guards the list.
 */
#ifndef HGX_LIST_H
#define HGX_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct hgx_list {
    struct hgx_list *next, *prev;
};

/* The element of type `type` whose member `member` is link. */
#define hgx_list_entry(link, type, member)                                               \
    ((type *)(void *)((char *)(link)-offsetof(type, member)))

/* Empty list, or an unlinked element link. */
static inline void hgx_list_init(struct hgx_list *head)
{
    head->next = head;
    head->prev = head;
}

static inline bool hgx_list_empty(const struct hgx_list *head)
{
    return head->next == head;
}

/* True while link is on a list (links start unlinked after hgx_list_init). */
static inline bool hgx_list_linked(const struct hgx_list *link)
{
    return link->next != link;
}

static inline void hgx_list_insert_between(struct hgx_list *link, struct hgx_list *prev,
                                           struct hgx_list *next)
{
    link->prev = prev;
    link->next = next;
    prev->next = link;
    next->prev = link;
}

/* Add link first. */
static inline void hgx_list_push_front(struct hgx_list *head, struct hgx_list *link)
{
    hgx_list_insert_between(link, head, head->next);
}

/* Add link last. */
static inline void hgx_list_push_back(struct hgx_list *head, struct hgx_list *link)
{
    hgx_list_insert_between(link, head->prev, head);
}

/* Take link off its list; an unlinked link stays as it is. */
static inline void hgx_list_remove(struct hgx_list *link)
{
    link->prev->next = link->next;
    link->next->prev = link->prev;
    hgx_list_init(link);
}

/* First link, or NULL when empty. */
static inline struct hgx_list *hgx_list_first(const struct hgx_list *head)
{
    return hgx_list_empty(head) ? NULL : head->next;
}

/* Take the first link off and return it, or NULL when empty. */
static inline struct hgx_list *hgx_list_pop_front(struct hgx_list *head)
{
    struct hgx_list *link = hgx_list_first(head);
    if (link)
        hgx_list_remove(link);
    return link;
}

/* Every link, first to last; the body must not remove `it`. */
#define hgx_list_for_each(it, head)                                                      \
    for ((it) = (head)->next; (it) != (head); (it) = (it)->next)

/* Every link, first to last; the body may remove `it` (tmp holds its successor). */
#define hgx_list_for_each_safe(it, tmp, head)                                            \
    for ((it) = (head)->next, (tmp) = (it)->next; (it) != (head);                        \
         (it) = (tmp), (tmp) = (it)->next)

#endif /* HGX_LIST_H */

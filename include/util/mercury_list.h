/**
 * @file mercury_list.h
 * Mercury's intrusive doubly linked list macros (HG_LIST_*): elements can be
 * removed in O(1) without the head.
 */
#ifndef MERCURY_LIST_H
#define MERCURY_LIST_H

#include <stddef.h>

/** Declare a list head type for elements of struct @p type. */
#define HG_LIST_HEAD(type)                                                               \
    struct {                                                                             \
        struct type *head;                                                               \
    }
/** Static initializer of an empty list head. */
#define HG_LIST_HEAD_INITIALIZER(name)                                                   \
    {                                                                                    \
        NULL                                                                             \
    }
/** Declare the list head type struct @p head_name for elements of struct @p type. */
#define HG_LIST_HEAD_DECL(head_name, type)                                               \
    struct head_name {                                                                   \
        struct type *head;                                                               \
    }
/** Define @p var, an empty list head of type struct @p head_name. */
#define HG_LIST_HEAD_INIT(head_name, var)                                                \
    struct head_name var = HG_LIST_HEAD_INITIALIZER(var)
/** Declare the link field of an element of struct @p type. */
#define HG_LIST_ENTRY(type)                                                              \
    struct {                                                                             \
        struct type *next;                                                               \
        struct type **prev;                                                              \
    }
/** Make list @p l empty. */
#define HG_LIST_INIT(l) ((l)->head = NULL)
/** True when list @p l has no element. */
#define HG_LIST_IS_EMPTY(l) ((l)->head == NULL)
/** First element of @p l, NULL if empty. */
#define HG_LIST_FIRST(l) ((l)->head)
/** Element after @p e, NULL at the end. */
#define HG_LIST_NEXT(e, field) ((e)->field.next)
/** Insert @p e at the head of @p l. */
#define HG_LIST_INSERT_HEAD(l, e, field)                                                 \
    do {                                                                                 \
        if (((e)->field.next = (l)->head) != NULL)                                       \
            (l)->head->field.prev = &(e)->field.next;                                    \
        (l)->head = (e);                                                                 \
        (e)->field.prev = &(l)->head;                                                    \
    } while (0)
/** Insert @p e after @p at (an element of a list). */
#define HG_LIST_INSERT_AFTER(at, e, field)                                               \
    do {                                                                                 \
        (e)->field.next = (at)->field.next;                                              \
        if ((e)->field.next != NULL)                                                     \
            (e)->field.next->field.prev = &(e)->field.next;                              \
        (e)->field.prev = &(at)->field.next;                                             \
        (at)->field.next = (e);                                                          \
    } while (0)
/** Insert @p e before @p at (an element of a list). */
#define HG_LIST_INSERT_BEFORE(at, e, field)                                              \
    do {                                                                                 \
        (e)->field.next = (at);                                                          \
        (e)->field.prev = (at)->field.prev;                                              \
        *(at)->field.prev = (e);                                                         \
        (at)->field.prev = &(e)->field.next;                                             \
    } while (0)
/** Remove @p e from the list it is in. */
#define HG_LIST_REMOVE(e, field)                                                         \
    do {                                                                                 \
        if ((e)->field.next != NULL)                                                     \
            (e)->field.next->field.prev = (e)->field.prev;                               \
        *(e)->field.prev = (e)->field.next;                                              \
    } while (0)
/** Iterate @p var over @p l (do not remove @p var inside). */
#define HG_LIST_FOREACH(var, l, field)                                                   \
    for ((var) = (l)->head; (var); (var) = (var)->field.next)

#endif /* MERCURY_LIST_H */

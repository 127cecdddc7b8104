/**
 * @file mercury_queue.h
 * Mercury's intrusive singly linked tail queue macros (HG_QUEUE_*): a head
 * with first and last pointers, an entry field in each element.
 */
#ifndef MERCURY_QUEUE_H
#define MERCURY_QUEUE_H

#include <stddef.h>

/** Declare a queue head type for elements of struct @p type. */
#define HG_QUEUE_HEAD(type)                                                              \
    struct {                                                                             \
        struct type *head;                                                               \
        struct type **tail;                                                              \
    }
/** Static initializer of queue head @p name. */
#define HG_QUEUE_HEAD_INITIALIZER(name)                                                  \
    {                                                                                    \
        NULL, &(name).head                                                               \
    }
/** Declare the queue head type struct @p head_name for elements of struct @p type. */
#define HG_QUEUE_HEAD_DECL(head_name, type)                                              \
    struct head_name {                                                                   \
        struct type *head;                                                               \
        struct type **tail;                                                              \
    }
/** Define @p var, an empty queue head of type struct @p head_name. */
#define HG_QUEUE_HEAD_INIT(head_name, var)                                               \
    struct head_name var = HG_QUEUE_HEAD_INITIALIZER(var)
/** Declare the link field of an element of struct @p type. */
#define HG_QUEUE_ENTRY(type)                                                             \
    struct {                                                                             \
        struct type *next;                                                               \
    }
/** Make queue @p q empty. */
#define HG_QUEUE_INIT(q)                                                                 \
    do {                                                                                 \
        (q)->head = NULL;                                                                \
        (q)->tail = &(q)->head;                                                          \
    } while (0)
/** True when queue @p q has no element. */
#define HG_QUEUE_IS_EMPTY(q) ((q)->head == NULL)
/** First element of @p q, NULL if empty. */
#define HG_QUEUE_FIRST(q) ((q)->head)
/** Element after @p e (link field @p field), NULL at the end. */
#define HG_QUEUE_NEXT(e, field) ((e)->field.next)
/** Append @p e to @p q. */
#define HG_QUEUE_PUSH_TAIL(q, e, field)                                                  \
    do {                                                                                 \
        (e)->field.next = NULL;                                                          \
        *(q)->tail = (e);                                                                \
        (q)->tail = &(e)->field.next;                                                    \
    } while (0)
/** Remove the first element of @p q (nothing if empty). */
#define HG_QUEUE_POP_HEAD(q, field)                                                      \
    do {                                                                                 \
        if ((q)->head != NULL && ((q)->head = (q)->head->field.next) == NULL)            \
            (q)->tail = &(q)->head;                                                      \
    } while (0)
/** Remove @p e (of struct @p type, in @p q) from @p q: O(n), walks from the head. */
#define HG_QUEUE_REMOVE(q, e, type, field)                                               \
    do {                                                                                 \
        struct type **hg_queue_at_ = &(q)->head;                                         \
        while (*hg_queue_at_ != NULL && *hg_queue_at_ != (e))                            \
            hg_queue_at_ = &(*hg_queue_at_)->field.next;                                 \
        if (*hg_queue_at_ != NULL) {                                                     \
            *hg_queue_at_ = (e)->field.next;                                             \
            if (*hg_queue_at_ == NULL)                                                   \
                (q)->tail = hg_queue_at_;                                                \
        }                                                                                \
    } while (0)
/** Iterate @p var over @p q. */
#define HG_QUEUE_FOREACH(var, q, field)                                                  \
    for ((var) = (q)->head; (var); (var) = (var)->field.next)

#endif /* MERCURY_QUEUE_H */

/**
 * @file mercury_thread_annotation.h
 * Mercury's lock annotations for clang's thread safety analysis
 * (-Wthread-safety): HG_LOCK_CAPABILITY names a lock type, HG_LOCK_ACQUIRE,
 * HG_LOCK_RELEASE and the others describe what a function does to the locks
 * given as arguments. Under clang they are clang's attributes; with any other
 * compiler they expand to nothing, so annotated declarations compile
 * everywhere.
 */
#ifndef MERCURY_THREAD_ANNOTATION_H
#define MERCURY_THREAD_ANNOTATION_H

/** The attribute @p x under clang, nothing elsewhere. */
#if defined(__clang__)
#define HG_THREAD_ANNOTATION_ATTRIBUTE__(x) __attribute__((x))
#else
#define HG_THREAD_ANNOTATION_ATTRIBUTE__(x)
#endif

/** On a type: its objects are locks, called @p x in the analysis' messages. */
#define HG_LOCK_CAPABILITY(x) HG_THREAD_ANNOTATION_ATTRIBUTE__(capability(x))

/** On a function: it takes the locks given (exclusive) and returns holding them. */
#define HG_LOCK_ACQUIRE(...)                                                             \
    HG_THREAD_ANNOTATION_ATTRIBUTE__(acquire_capability(__VA_ARGS__))

/** On a function: it takes the locks given shared (read) and returns holding them. */
#define HG_LOCK_ACQUIRE_SHARED(...)                                                      \
    HG_THREAD_ANNOTATION_ATTRIBUTE__(acquire_shared_capability(__VA_ARGS__))

/** On a function: it releases the locks given, held exclusive. */
#define HG_LOCK_RELEASE(...)                                                             \
    HG_THREAD_ANNOTATION_ATTRIBUTE__(release_capability(__VA_ARGS__))

/** On a function: it releases the locks given, held shared. */
#define HG_LOCK_RELEASE_SHARED(...)                                                      \
    HG_THREAD_ANNOTATION_ATTRIBUTE__(release_shared_capability(__VA_ARGS__))

/** On a function: it tries to take the locks; the first argument is the value it
 * returns on success. */
#define HG_LOCK_TRY_ACQUIRE(...)                                                         \
    HG_THREAD_ANNOTATION_ATTRIBUTE__(try_acquire_capability(__VA_ARGS__))

/** Same, taking the locks shared. */
#define HG_LOCK_TRY_ACQUIRE_SHARED(...)                                                  \
    HG_THREAD_ANNOTATION_ATTRIBUTE__(try_acquire_shared_capability(__VA_ARGS__))

/** On a function: the analysis skips its body. */
#define HG_LOCK_NO_THREAD_SAFETY_ANALYSIS                                                \
    HG_THREAD_ANNOTATION_ATTRIBUTE__(no_thread_safety_analysis)

#endif /* MERCURY_THREAD_ANNOTATION_H */

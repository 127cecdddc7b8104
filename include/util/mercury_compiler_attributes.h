/**
 * @file mercury_compiler_attributes.h
 * Mercury's portable spellings of compiler attributes (HG_ATTR_*): symbol
 * visibility, unused results and variables, alignment, printf-style format
 * checks, constructors and destructors, and switch fall-through. Each one
 * expands to the GNU attribute when the compiler has it (asked through
 * __has_attribute, or known for GCC before version 5) and to nothing otherwise,
 * so a declaration using them stays valid everywhere.
 */
#ifndef MERCURY_COMPILER_ATTRIBUTES_H
#define MERCURY_COMPILER_ATTRIBUTES_H

/* Double-underscore spellings: a program may define a macro named after the
 * plain attribute (e.g. "unused"), never one in the implementation's space. */
#if defined(__has_attribute)
#if __has_attribute(__visibility__)
#define HG_ATTR_ABI_IMPORT __attribute__((__visibility__("default")))
#define HG_ATTR_ABI_EXPORT __attribute__((__visibility__("default")))
#define HG_ATTR_ABI_HIDDEN __attribute__((__visibility__("hidden")))
#endif
#if __has_attribute(__warn_unused_result__)
#define HG_ATTR_WARN_UNUSED_RESULT __attribute__((__warn_unused_result__))
#endif
#if __has_attribute(__unused__)
#define HG_ATTR_UNUSED __attribute__((__unused__))
#endif
#if __has_attribute(__aligned__)
#define HG_ATTR_ALIGNED(x) __attribute__((__aligned__(x)))
#endif
#if __has_attribute(__format__)
#define HG_ATTR_FORMAT(func, fmt, firstarg)                                              \
    __attribute__((__format__(func, fmt, firstarg)))
#endif
#if __has_attribute(__constructor__)
#define HG_ATTR_CONSTRUCTOR __attribute__((__constructor__))
#define HG_ATTR_CONSTRUCTOR_PRIORITY(x) __attribute__((__constructor__(x)))
#endif
#if __has_attribute(__destructor__)
#define HG_ATTR_DESTRUCTOR __attribute__((__destructor__))
#endif
/* The Intel classic compiler reports the attribute but warns on its use. */
#if __has_attribute(__fallthrough__) && !defined(__INTEL_COMPILER)
#define HG_ATTR_FALLTHROUGH __attribute__((__fallthrough__))
#endif
#elif defined(__GNUC__)
/* GCC 4 has no __has_attribute but knows all of these except fall-through. */
#define HG_ATTR_ABI_IMPORT __attribute__((__visibility__("default")))
#define HG_ATTR_ABI_EXPORT __attribute__((__visibility__("default")))
#define HG_ATTR_ABI_HIDDEN __attribute__((__visibility__("hidden")))
#define HG_ATTR_WARN_UNUSED_RESULT __attribute__((__warn_unused_result__))
#define HG_ATTR_UNUSED __attribute__((__unused__))
#define HG_ATTR_ALIGNED(x) __attribute__((__aligned__(x)))
#define HG_ATTR_FORMAT(func, fmt, firstarg)                                              \
    __attribute__((__format__(func, fmt, firstarg)))
#define HG_ATTR_CONSTRUCTOR __attribute__((__constructor__))
#define HG_ATTR_CONSTRUCTOR_PRIORITY(x) __attribute__((__constructor__(x)))
#define HG_ATTR_DESTRUCTOR __attribute__((__destructor__))
#endif

/** Visibility of a symbol a program takes from a shared library. */
#ifndef HG_ATTR_ABI_IMPORT
#define HG_ATTR_ABI_IMPORT
#endif
/** Visibility of a symbol a shared library gives to programs. */
#ifndef HG_ATTR_ABI_EXPORT
#define HG_ATTR_ABI_EXPORT
#endif
/** Visibility of a symbol kept inside its shared library. */
#ifndef HG_ATTR_ABI_HIDDEN
#define HG_ATTR_ABI_HIDDEN
#endif
/** Warn when a caller ignores the function's result. */
#ifndef HG_ATTR_WARN_UNUSED_RESULT
#define HG_ATTR_WARN_UNUSED_RESULT
#endif
/** The variable, parameter or function may go unused without a warning. */
#ifndef HG_ATTR_UNUSED
#define HG_ATTR_UNUSED
#endif
/** Align the variable or type on @p x bytes (a power of two). */
#ifndef HG_ATTR_ALIGNED
#define HG_ATTR_ALIGNED(x)
#endif
/** Check calls like @p func (printf, scanf): format string is argument @p fmt,
 * the values start at argument @p firstarg (0 for a va_list). */
#ifndef HG_ATTR_FORMAT
#define HG_ATTR_FORMAT(func, fmt, firstarg)
#endif
/** Run the function before main() (or when its shared library loads). */
#ifndef HG_ATTR_CONSTRUCTOR
#define HG_ATTR_CONSTRUCTOR
#endif
/** Same, ordered by @p x (101 and up: lower runs first). */
#ifndef HG_ATTR_CONSTRUCTOR_PRIORITY
#define HG_ATTR_CONSTRUCTOR_PRIORITY(x)
#endif
/** Run the function after main() returns (or when its shared library unloads). */
#ifndef HG_ATTR_DESTRUCTOR
#define HG_ATTR_DESTRUCTOR
#endif
/** A statement, "HG_ATTR_FALLTHROUGH;", marking an intended fall-through to the
 * next case label. */
#ifndef HG_ATTR_FALLTHROUGH
#define HG_ATTR_FALLTHROUGH                                                              \
    do {                                                                                 \
    } while (0)
#endif

#endif /* MERCURY_COMPILER_ATTRIBUTES_H */

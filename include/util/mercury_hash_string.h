/**
 * @file mercury_hash_string.h
 * Mercury's string hash (hg_hash_string): the djb2 hash of a NUL-terminated
 * string. HG_Register_name() and HG_Registered_name() derive an RPC id from
 * a name with it, as Mercury 2.4 does, so a program that computes an id with
 * hg_hash_string() and registers it with HG_Register() meets the same id.
 */
#ifndef MERCURY_HASH_STRING_H
#define MERCURY_HASH_STRING_H

#include "mercury_util_config.h"

/**
 * Hash a string (djb2: start at 5381, multiply by 33 and add each byte,
 * modulo 2^32).
 * \param string [IN] NUL-terminated string
 * \return the hash
 */
static HG_UTIL_INLINE unsigned int hg_hash_string(const char *string)
{
    unsigned int h = 5381;
    for (const unsigned char *p = (const unsigned char *)string; *p; p++)
        h = h * 33u + *p;
    return h;
}

#endif /* MERCURY_HASH_STRING_H */

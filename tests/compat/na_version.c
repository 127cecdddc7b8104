/*
 * na_version: a program of Mercury's NA layer alone, built against an
 * installed hgx through CMake's `na` target (tests/compat/CMakeLists.txt).
 * Exit 0 if the headers and the library agree on NA 6.0 and say that the
 * libfabric plugin was built.
 */
#include <na.h>

#include <stdio.h>

int main(void)
{
    unsigned int major = 0, minor = 0, patch = 0;
    NA_Version_get(&major, &minor, &patch);
    int ok = major == NA_VERSION_MAJOR && minor == NA_VERSION_MINOR &&
             patch == NA_VERSION_PATCH && major == 6 && minor == 0;
#ifndef NA_HAS_OFI
    ok = 0;
#endif
    printf("na_version: NA %u.%u.%u: %s\n", major, minor, patch, ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}

/*
 * na_conformance_mem.c -- conformance cases of the memory handle calls:
 * creation with bad arguments, registration twice, descriptors truncated,
 * with trailing bytes and garbage.
 */
#include "na_conformance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deserialize n bytes; a handle got is freed at once. */
static na_return_t deserialize(const struct conf *c, const void *buf, size_t n)
{
    na_mem_handle_t *h = NULL;
    na_return_t ret = NA_Mem_handle_deserialize(c->cls, &h, buf, n);
    if (ret == NA_SUCCESS)
        NA_Mem_handle_free(c->cls, h);
    return ret;
}

static void cases_create(const struct conf *c)
{
    char buf[64];
    na_mem_handle_t *h = NULL;
    struct na_segment segs[2] = {{buf, 32}, {buf + 32, 0}};
    size_t max = NA_Mem_handle_get_max_segments(c->cls);

    conf_code(c, "mem_create.null_buffer",
              NA_Mem_handle_create(c->cls, NULL, 64, NA_MEM_READWRITE, &h),
              NA_INVALID_ARG);
    conf_code(c, "mem_create.size_0",
              NA_Mem_handle_create(c->cls, buf, 0, NA_MEM_READWRITE, &h), NA_INVALID_ARG);
    conf_code(c, "mem_create.flags_0", NA_Mem_handle_create(c->cls, buf, 64, 0, &h),
              NA_INVALID_ARG);
    conf_code(c, "mem_create.flags_unknown",
              NA_Mem_handle_create(c->cls, buf, 64, NA_MEM_READWRITE | 0x10, &h),
              NA_INVALID_ARG);
    conf_code(c, "mem_create.null_output",
              NA_Mem_handle_create(c->cls, buf, 64, NA_MEM_READWRITE, NULL),
              NA_INVALID_ARG);
    conf_code(c, "mem_segments.count_0",
              NA_Mem_handle_create_segments(c->cls, segs, 0, NA_MEM_READWRITE, &h),
              NA_INVALID_ARG);
    conf_code(c, "mem_segments.empty_segment",
              NA_Mem_handle_create_segments(c->cls, segs, 2, NA_MEM_READWRITE, &h),
              NA_INVALID_ARG);
    if (max < 65536) {
        struct na_segment *many = calloc(max + 1, sizeof(*many));
        for (size_t i = 0; i <= max; i++)
            many[i] = (struct na_segment){buf, 1};
        conf_code(
            c, "mem_segments.count_past_max",
            NA_Mem_handle_create_segments(c->cls, many, max + 1, NA_MEM_READWRITE, &h),
            NA_INVALID_ARG);
        free(many);
    } else {
        conf_na(c, "mem_segments.count_past_max", "the segment limit is above 65535");
    }
}

/* Registration twice, deregistration twice, device memory, remote handles. */
static void cases_register(const struct conf *c)
{
    char buf[4096];
    na_mem_handle_t *h = NULL, *remote = NULL;
    unsigned char ser[1024];

    NA_Mem_handle_create(c->cls, buf, sizeof(buf), NA_MEM_READWRITE, &h);
    conf_code(c, "mem_serialize.unregistered",
              NA_Mem_handle_serialize(c->cls, ser, 1024, h), NA_INVALID_ARG);
    conf_code(c, "mem_register.null", NA_Mem_register(c->cls, NULL, NA_MEM_TYPE_HOST, 0),
              NA_INVALID_ARG);
    conf_code(c, "mem_register.device_memory",
              NA_Mem_register(c->cls, h, NA_MEM_TYPE_CUDA, 0), NA_OPNOTSUPPORTED);
    conf_code(c, "mem_register.first", NA_Mem_register(c->cls, h, NA_MEM_TYPE_HOST, 0),
              NA_SUCCESS);
    conf_code(c, "mem_register.twice", NA_Mem_register(c->cls, h, NA_MEM_TYPE_HOST, 0),
              NA_SUCCESS);
    size_t n = NA_Mem_handle_get_serialize_size(c->cls, h);
    conf_true(c, "mem_serialize.size", n > 0 && n <= sizeof(ser), "1 to 1024 bytes");
    if (n == 0 || n > sizeof(ser))
        n = sizeof(ser);
    conf_code(c, "mem_serialize.null_buffer", NA_Mem_handle_serialize(c->cls, NULL, n, h),
              NA_INVALID_ARG);
    conf_code(c, "mem_serialize.short_buffer",
              NA_Mem_handle_serialize(c->cls, ser, n - 1, h), NA_OVERFLOW);
    conf_code(c, "mem_serialize.exact", NA_Mem_handle_serialize(c->cls, ser, n, h),
              NA_SUCCESS);
    conf_code(c, "mem_deserialize.round_trip",
              NA_Mem_handle_deserialize(c->cls, &remote, ser, n), NA_SUCCESS);
    conf_code(c, "mem_register.remote_handle",
              NA_Mem_register(c->cls, remote, NA_MEM_TYPE_HOST, 0), NA_INVALID_ARG);
    conf_code(c, "mem_deregister.remote_handle", NA_Mem_deregister(c->cls, remote),
              NA_INVALID_ARG);
    conf_code(c, "mem_deregister.first", NA_Mem_deregister(c->cls, h), NA_SUCCESS);
    conf_code(c, "mem_deregister.twice", NA_Mem_deregister(c->cls, h), NA_SUCCESS);
    conf_code(c, "mem_deregister.null", NA_Mem_deregister(c->cls, NULL), NA_INVALID_ARG);
    NA_Mem_handle_free(c->cls, remote);
    NA_Mem_handle_free(c->cls, h);
}

/* Descriptors as a peer could send them: cut short, longer, garbage. */
static void cases_deserialize(const struct conf *c)
{
    char region[4096];
    na_mem_handle_t *h = NULL;
    NA_Mem_handle_create(c->cls, region, sizeof(region), NA_MEM_READWRITE, &h);
    NA_Mem_register(c->cls, h, NA_MEM_TYPE_HOST, 0);
    size_t n = NA_Mem_handle_get_serialize_size(c->cls, h);
    unsigned char *ser = calloc(1, n + 16), *bad = calloc(1, n + 16);
    NA_Mem_handle_serialize(c->cls, ser, n, h);

    conf_code(c, "mem_deserialize.null_buffer", deserialize(c, NULL, n), NA_INVALID_ARG);
    conf_code(c, "mem_deserialize.size_0", deserialize(c, ser, 0), NA_INVALID_ARG);
    conf_code(c, "mem_deserialize.one_byte", deserialize(c, ser, 1), NA_PROTOCOL_ERROR);
    conf_code(c, "mem_deserialize.half", deserialize(c, ser, n / 2), NA_PROTOCOL_ERROR);
    conf_code(c, "mem_deserialize.truncated", deserialize(c, ser, n - 1),
              NA_PROTOCOL_ERROR);
    /* As for addresses: what follows a whole descriptor is not read. */
    conf_code(c, "mem_deserialize.trailing_bytes", deserialize(c, ser, n + 16),
              NA_SUCCESS);
    static const unsigned char fills[] = {0x00, 0xff, 0xa5};
    for (size_t i = 0; i < sizeof(fills); i++) {
        char name[64];
        memset(bad, fills[i], n);
        snprintf(name, sizeof(name), "mem_deserialize.garbage_%02x", fills[i]);
        conf_code(c, name, deserialize(c, bad, n), NA_PROTOCOL_ERROR);
    }
    free(bad);
    free(ser);
    NA_Mem_deregister(c->cls, h);
    NA_Mem_handle_free(c->cls, h);
}

void conf_cases_mem(const struct conf *c)
{
    cases_create(c);
    cases_register(c);
    cases_deserialize(c);
}

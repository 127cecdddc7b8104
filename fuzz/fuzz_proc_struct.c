/*
 * fuzz_proc_struct.c -- libFuzzer target: decode a MERCURY_GEN_PROC struct (fixed
 * ints, strings, const string, raw bytes, hand-written length-prefixed bytes,
 * nested structs, a bulk descriptor) from untrusted bytes, then free it.
 *
 * Input: byte 0 = options (bit 0: CRC64 checksum, the last 8 bytes are the
 * checksum to verify), the rest is the encoded struct.
 *
 * Oracles (besides ASan/UBSan/LeakSanitizer):
 *  - a failed decode leaves no allocation behind and every pointer NULL
 *    (the generated routine undoes a partial decode);
 *  - a successful decode yields NUL-terminated strings, and re-encoding the
 *    struct then decoding it again gives the same values.
 */
#include "fuzz_proc_common.h"
#include "hg_proc_private.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hg_class_t *fz_class;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("HG_LOG_LEVEL", "none", 0);
    /* A class lets the hg_bulk_t member decode for real; listen is not needed. */
    fz_class = HG_Init("ofi+tcp://127.0.0.1", false);
    if (!fz_class) {
        fprintf(stderr, "fuzz_proc_struct: HG_Init(ofi+tcp) failed\n");
        abort();
    }
    return 0;
}

static bool blob_eq(const fz_blob_t *a, const fz_blob_t *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->buf, b->buf, a->len) == 0);
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool inner_eq(const fz_inner_t *a, const fz_inner_t *b)
{
    return a->tag == b->tag && str_eq(a->label, b->label) && a->value == b->value &&
           blob_eq(&a->blob, &b->blob);
}

static void check_all_null(const fz_in_t *s)
{
    if (s->name || s->label || s->blob.buf || s->tail || s->bulk != HG_BULK_NULL ||
        s->inner.label || s->inner.blob.buf || s->inner2.label || s->inner2.blob.buf)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool crc = data[0] & 1;
    size_t n = size - 1;
    const uint8_t *want_crc = NULL;
    if (crc) {
        if (n < 8)
            return 0;
        n -= 8;
        want_crc = data + 1 + n;
    }
    /* Exact-size copy: ASan catches any read past the message. */
    unsigned char *buf = malloc(n ? n : 1);
    if (!buf)
        abort();
    memcpy(buf, data + 1, n);

    hg_proc_t proc;
    if (hg_proc_create(fz_class, crc ? HG_CRC64 : HG_NOHASH, &proc) != HG_SUCCESS ||
        hg_proc_reset(proc, buf, n, HG_DECODE) != HG_SUCCESS)
        abort();
    fz_in_t s;
    memset(&s, 0xa5, sizeof(s)); /* garbage, as in a fresh stack frame */
    hg_return_t ret = hg_proc_fz_in_t(proc, &s);
    if (ret != HG_SUCCESS) {
        check_all_null(&s);
        hg_proc_free(proc);
        free(buf);
        return 0;
    }
    if (hg_proc_get_size_used(proc) > n)
        abort();
    if (crc) {
        hg_proc_flush(proc);
        (void)hg_proc_checksum_verify(proc, want_crc, 8);
    }
    /* Strings are NUL-terminated within what was allocated (ASan checks). */
    const char *strs[] = {s.name, s.label, s.tail, s.inner.label, s.inner2.label};
    for (size_t i = 0; i < sizeof(strs) / sizeof(*strs); i++)
        if (strs[i])
            (void)strlen(strs[i]);

    /* Round trip (a deserialized bulk handle cannot be serialized again). */
    hg_bulk_t bulk = s.bulk;
    s.bulk = HG_BULK_NULL;
    hg_proc_t enc;
    unsigned char small[16];
    if (hg_proc_create(fz_class, HG_NOHASH, &enc) != HG_SUCCESS ||
        hg_proc_reset(enc, small, sizeof(small), HG_ENCODE) != HG_SUCCESS)
        abort();
    if (hg_proc_fz_in_t(enc, &s) != HG_SUCCESS)
        abort();
    void *ebuf = hg_proc_get_extra_buf(enc) ? hg_proc_get_extra_buf(enc) : small;
    hg_size_t elen = hg_proc_get_size_used(enc);
    hg_proc_t dec;
    if (hg_proc_create(fz_class, HG_NOHASH, &dec) != HG_SUCCESS ||
        hg_proc_reset(dec, ebuf, elen, HG_DECODE) != HG_SUCCESS)
        abort();
    fz_in_t t;
    if (hg_proc_fz_in_t(dec, &t) != HG_SUCCESS || hg_proc_get_size_used(dec) != elen)
        abort();
    if (t.u8 != s.u8 || t.i32 != s.i32 || !str_eq(t.name, s.name) ||
        memcmp(t.fixed.b, s.fixed.b, sizeof(t.fixed.b)) != 0 ||
        !inner_eq(&t.inner, &s.inner) || t.flag != s.flag || !str_eq(t.label, s.label) ||
        !blob_eq(&t.blob, &s.blob) || t.bulk != HG_BULK_NULL || t.u64 != s.u64 ||
        !inner_eq(&t.inner2, &s.inner2) || !str_eq(t.tail, s.tail))
        abort();
    if (hg_proc_reset(dec, NULL, 0, HG_FREE) != HG_SUCCESS ||
        hg_proc_fz_in_t(dec, &t) != HG_SUCCESS)
        abort();
    check_all_null(&t);
    hg_proc_free(dec);
    hg_proc_free(enc);

    /* Free the decoded struct through the proc, as HG_Free_input does. */
    s.bulk = bulk;
    if (hg_proc_reset(proc, NULL, 0, HG_FREE) != HG_SUCCESS ||
        hg_proc_fz_in_t(proc, &s) != HG_SUCCESS)
        abort();
    check_all_null(&s);
    hg_proc_free(proc);
    free(buf);
    return 0;
}

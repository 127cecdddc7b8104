/*
 * fuzz_bulk_deserialize.c -- libFuzzer target: HG_Bulk_deserialize (hg
 * descriptor header, the NA memory handle inside, the owner of a bound handle
 * and the data of an eager one) and NA_Mem_handle_deserialize directly, on an
 * ofi+tcp class, from untrusted bytes.
 *
 * Input: byte 0 selects the entry point (even: HG_Bulk_deserialize, odd:
 * NA_Mem_handle_deserialize); the rest is the descriptor.
 * Oracles: ASan/UBSan/LSan; an accepted handle's size/flags are consistent,
 * it can be freed (and reference-counted), and a refused one yields NULL.
 */
#include "hg_internal.h" /* hg_class->na_class */
#include "mercury.h"
#include "mercury_bulk.h"
#include "na.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hg_class_t *fz_class;
static na_class_t *fz_na;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("HG_LOG_LEVEL", "none", 0);
    fz_class = HG_Init("ofi+tcp://127.0.0.1", false);
    if (!fz_class) {
        fprintf(stderr, "fuzz_bulk_deserialize: HG_Init(ofi+tcp) failed\n");
        abort();
    }
    fz_na = fz_class->na_class;
    if (!fz_na)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t n = size - 1;
    unsigned char *buf = malloc(n ? n : 1);
    if (!buf)
        abort();
    memcpy(buf, data + 1, n);
    if ((data[0] & 1) == 0) {
        hg_bulk_t h = (hg_bulk_t)(uintptr_t)1;
        hg_return_t ret = HG_Bulk_deserialize(fz_class, &h, buf, n);
        if (ret != HG_SUCCESS) {
            if (h != HG_BULK_NULL)
                abort();
        } else {
            if (h == HG_BULK_NULL)
                abort();
            uint8_t fl = HG_Bulk_get_flags(h);
            if (fl != HG_BULK_READ_ONLY && fl != HG_BULK_WRITE_ONLY &&
                fl != HG_BULK_READWRITE)
                abort();
            (void)HG_Bulk_get_size(h);
            (void)HG_Bulk_get_segment_count(h);
            /* A remote handle gives no local access; it re-serializes to the
             * descriptor it was made from (passed on to a third process). */
            hg_size_t dn = HG_Bulk_get_serialize_size(h, 0);
            unsigned char *d = malloc(dn ? dn : 1);
            if (!d || dn > n || HG_Bulk_serialize(d, dn, 0, h) != HG_SUCCESS ||
                memcmp(d, buf, dn) != 0)
                abort();
            free(d);
            void *p;
            hg_size_t s;
            uint32_t cnt;
            if (HG_Bulk_access(h, 0, 0, fl, 1, &p, &s, &cnt) == HG_SUCCESS)
                abort();
            HG_Bulk_ref_incr(h);
            HG_Bulk_free(h);
            HG_Bulk_free(h);
        }
    } else {
        na_mem_handle_t *mh = NULL;
        na_return_t ret = NA_Mem_handle_deserialize(fz_na, &mh, buf, n);
        if (ret == NA_SUCCESS) {
            if (!mh)
                abort();
            /* Round trip: a deserialized handle serializes to the same bytes. */
            size_t need = NA_Mem_handle_get_serialize_size(fz_na, mh);
            if (need > n)
                abort();
            unsigned char *again = malloc(need ? need : 1);
            if (!again || NA_Mem_handle_serialize(fz_na, again, need, mh) != NA_SUCCESS)
                abort();
            free(again);
            NA_Mem_handle_free(fz_na, mh);
        }
    }
    free(buf);
    return 0;
}

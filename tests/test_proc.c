/*
 * test_proc.c -- unit tests of the proc layer: typed routines, strings, generated
 * struct routines, extra buffer, untrusted input and checksums (CRC-64).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hg_crc64.h"
#include "hg_proc_private.h"
#include "hgx_log.h"
#include "mercury_macros.h"
#include "mercury_proc_string.h"

/* ---- generated types ------------------------------------------------------- */

MERCURY_GEN_PROC(point_t, ((int32_t)(x))((int32_t)(y)))

MERCURY_GEN_PROC(
    big_in_t,
    ((int8_t)(i8))((uint8_t)(u8))((int16_t)(i16))((uint16_t)(u16))((int32_t)(i32))(
        (uint32_t)(u32))((int64_t)(i64))((uint64_t)(u64))((hg_size_t)(size))(
        (hg_bool_t)(flag))((hg_id_t)(id))((hg_string_t)(name))(
        (hg_const_string_t)(label))((point_t)(where))((hg_string_t)(tail)))

/* A struct declared by hand, with a member the routine does not touch. */
typedef struct {
    uint64_t cookie;
    hg_string_t path;
    int local_only;
} handle_t;
MERCURY_GEN_STRUCT_PROC(handle_t, ((uint64_t)(cookie))((hg_string_t)(path)))

/* More fields than any fixed-arity macro table would allow. */
#define F8(p)                                                                            \
    ((uint8_t)(p##0))((uint8_t)(p##1))((uint8_t)(p##2))((uint8_t)(p##3))(                \
        (uint8_t)(p##4))((uint8_t)(p##5))((uint8_t)(p##6))((uint8_t)(p##7))
MERCURY_GEN_PROC(wide_t, F8(a) F8(b) F8(c) F8(d) F8(e) F8(f) F8(g) F8(h)
                             F8(i)((hg_string_t)(last)))
#define WIDE_BYTES 72

/* MERCURY_REGISTER must expand to HG_Register_name with the generated routines. */
static hg_proc_cb_t registered_in, registered_out;
static hg_id_t fake_register(hg_class_t *cls, const char *name, hg_proc_cb_t in,
                             hg_proc_cb_t out, hg_rpc_cb_t cb)
{
    (void)cls;
    (void)name;
    (void)cb;
    registered_in = in;
    registered_out = out;
    return 42;
}
#define HG_Register_name fake_register

#ifndef HG_HAS_BOOST
#error "mercury_config.h must define HG_HAS_BOOST, as Mercury's does"
#endif

/* Margo's MARGO_REGISTER builds on the BOOST_PP_* names mercury_macros.h brings in. */
#define MARGO_LIKE_REGISTER(cls, name, in_t, out_t, cb)                                  \
    fake_register(cls, name, BOOST_PP_CAT(hg_proc_, in_t),                               \
                  BOOST_PP_CAT(hg_proc_, out_t), cb)

/* ---- helpers --------------------------------------------------------------- */

static hg_proc_t new_proc(void *buf, size_t size, hg_proc_op_t op, hg_proc_hash_t hash)
{
    hg_proc_t proc = HG_PROC_NULL;
    assert_int_equal(hg_proc_create_set(NULL, buf, size, op, hash, &proc), HG_SUCCESS);
    return proc;
}

/* Encode v with cb into a fresh buffer; returns the bytes used. */
static size_t encode(hg_proc_cb_t cb, void *v, unsigned char *buf, size_t size)
{
    hg_proc_t proc = new_proc(buf, size, HG_ENCODE, HG_NOHASH);
    assert_int_equal(cb(proc, v), HG_SUCCESS);
    assert_null(hg_proc_get_extra_buf(proc));
    size_t used = (size_t)hg_proc_get_size_used(proc);
    hg_proc_free(proc);
    return used;
}

static hg_return_t decode(hg_proc_cb_t cb, void *v, unsigned char *buf, size_t size)
{
    hg_proc_t proc = new_proc(buf, size, HG_DECODE, HG_NOHASH);
    hg_return_t ret = cb(proc, v);
    hg_proc_free(proc);
    return ret;
}

static void free_value(hg_proc_cb_t cb, void *v)
{
    hg_proc_t proc = new_proc(NULL, 0, HG_FREE, HG_NOHASH);
    assert_int_equal(cb(proc, v), HG_SUCCESS);
    hg_proc_free(proc);
}

static void fill_big(big_in_t *in, char *name, size_t name_len)
{
    memset(name, 'n', name_len - 1);
    name[name_len - 1] = '\0';
    *in = (big_in_t){.i8 = INT8_MIN,
                     .u8 = UINT8_MAX,
                     .i16 = INT16_MIN,
                     .u16 = UINT16_MAX,
                     .i32 = INT32_MIN,
                     .u32 = UINT32_MAX,
                     .i64 = INT64_MIN,
                     .u64 = UINT64_MAX,
                     .size = (hg_size_t)1 << 40,
                     .flag = HG_TRUE,
                     .id = UINT64_C(0x1122334455667788),
                     .name = name,
                     .label = "",
                     .where = {.x = -7, .y = 9},
                     .tail = NULL};
}

static void assert_big_equal(const big_in_t *a, const big_in_t *b)
{
    assert_int_equal(a->i8, b->i8);
    assert_int_equal(a->u8, b->u8);
    assert_int_equal(a->i16, b->i16);
    assert_int_equal(a->u16, b->u16);
    assert_int_equal(a->i32, b->i32);
    assert_int_equal(a->u32, b->u32);
    assert_true(a->i64 == b->i64);
    assert_true(a->u64 == b->u64);
    assert_true(a->size == b->size);
    assert_int_equal(a->flag, b->flag);
    assert_true(a->id == b->id);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->label, b->label);
    assert_int_equal(a->where.x, b->where.x);
    assert_int_equal(a->where.y, b->where.y);
    assert_null(b->tail);
}

/* ---- CRC-64 ---------------------------------------------------------------- */

static void test_crc64_check_value(void **state)
{
    (void)state;
    const char *check = "123456789";
    assert_true(hgx_crc64(0, check, 9) == HGX_CRC64_CHECK);
    assert_true(hgx_crc64_sw(0, check, 9) == HGX_CRC64_CHECK);
    assert_true(hgx_crc64(0, NULL, 0) == 0);
    /* Incremental: any split gives the same result. */
    for (size_t k = 0; k <= 9; k++)
        assert_true(hgx_crc64(hgx_crc64(0, check, k), check + k, 9 - k) ==
                    HGX_CRC64_CHECK);
}

static void test_crc64_sw_matches_default(void **state)
{
    (void)state;
    unsigned char buf[4099];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    /* Every length and misalignment the slicing loop distinguishes. */
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len + off <= sizeof(buf); len += 61)
            assert_true(hgx_crc64(0, buf + off, len) == hgx_crc64_sw(0, buf + off, len));
}

/* ---- fixed-width types ------------------------------------------------------ */

static void test_fixed_width_roundtrip(void **state)
{
    (void)state;
    unsigned char buf[128];
    int8_t i8 = INT8_MIN, o8;
    uint8_t u8 = 0xAB, p8;
    int16_t i16 = -12345, o16;
    uint16_t u16 = 0xBEEF, p16;
    int32_t i32 = INT32_MIN + 3, o32;
    uint32_t u32 = 0x01020304, p32;
    int64_t i64 = INT64_MIN + 5, o64;
    uint64_t u64 = UINT64_C(0x0102030405060708), p64;
    hg_size_t sz = UINT64_MAX - 1, osz;
    hg_bool_t b = HG_TRUE, ob;
    hg_id_t id = UINT64_C(0xDEADBEEFCAFEF00D), oid;

    hg_proc_t proc = new_proc(buf, sizeof(buf), HG_ENCODE, HG_NOHASH);
    assert_int_equal(hg_proc_get_op(proc), HG_ENCODE);
    assert_int_equal(hg_proc_int8_t(proc, &i8), HG_SUCCESS);
    assert_int_equal(hg_proc_uint8_t(proc, &u8), HG_SUCCESS);
    assert_int_equal(hg_proc_int16_t(proc, &i16), HG_SUCCESS);
    assert_int_equal(hg_proc_uint16_t(proc, &u16), HG_SUCCESS);
    assert_int_equal(hg_proc_int32_t(proc, &i32), HG_SUCCESS);
    assert_int_equal(hg_proc_uint32_t(proc, &u32), HG_SUCCESS);
    assert_int_equal(hg_proc_int64_t(proc, &i64), HG_SUCCESS);
    assert_int_equal(hg_proc_uint64_t(proc, &u64), HG_SUCCESS);
    assert_int_equal(hg_proc_hg_size_t(proc, &sz), HG_SUCCESS);
    assert_int_equal(hg_proc_hg_bool_t(proc, &b), HG_SUCCESS);
    assert_int_equal(hg_proc_hg_id_t(proc, &id), HG_SUCCESS);
    const size_t total = 1 + 1 + 2 + 2 + 4 + 4 + 8 + 8 + 8 + 1 + 8;
    assert_int_equal(hg_proc_get_size_used(proc), total);
    assert_int_equal(hg_proc_get_size_left(proc), sizeof(buf) - total);
    assert_int_equal(hg_proc_get_size(proc), sizeof(buf));
    hg_proc_free(proc);

    /* Little-endian on the wire: u32 sits at offset 10, u64 at 22. */
    static const unsigned char le32[] = {4, 3, 2, 1}, le64[] = {8, 7, 6, 5, 4, 3, 2, 1};
    assert_memory_equal(buf + 10, le32, 4);
    assert_memory_equal(buf + 22, le64, 8);

    proc = new_proc(buf, total, HG_DECODE, HG_NOHASH);
    assert_int_equal(hg_proc_int8_t(proc, &o8), HG_SUCCESS);
    assert_int_equal(hg_proc_uint8_t(proc, &p8), HG_SUCCESS);
    assert_int_equal(hg_proc_int16_t(proc, &o16), HG_SUCCESS);
    assert_int_equal(hg_proc_uint16_t(proc, &p16), HG_SUCCESS);
    assert_int_equal(hg_proc_int32_t(proc, &o32), HG_SUCCESS);
    assert_int_equal(hg_proc_uint32_t(proc, &p32), HG_SUCCESS);
    assert_int_equal(hg_proc_int64_t(proc, &o64), HG_SUCCESS);
    assert_int_equal(hg_proc_uint64_t(proc, &p64), HG_SUCCESS);
    assert_int_equal(hg_proc_hg_size_t(proc, &osz), HG_SUCCESS);
    assert_int_equal(hg_proc_hg_bool_t(proc, &ob), HG_SUCCESS);
    assert_int_equal(hg_proc_hg_id_t(proc, &oid), HG_SUCCESS);
    assert_int_equal(hg_proc_get_size_left(proc), 0);
    /* Nothing left: one more byte is an overflow, not a read past the end. */
    assert_int_equal(hg_proc_uint8_t(proc, &p8), HG_OVERFLOW);
    hg_proc_free(proc);

    assert_int_equal(o8, i8);
    assert_int_equal(p8, u8);
    assert_int_equal(o16, i16);
    assert_int_equal(p16, u16);
    assert_int_equal(o32, i32);
    assert_int_equal(p32, u32);
    assert_true(o64 == i64 && p64 == u64 && osz == sz && oid == id);
    assert_int_equal(ob, b);
}

static void test_raw_and_bytes(void **state)
{
    (void)state;
    unsigned char buf[64], in[20], out[20] = {0}, out2[3] = {0};
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (unsigned char)(0xF0 ^ i);

    hg_proc_t proc = new_proc(buf, sizeof(buf), HG_ENCODE, HG_NOHASH);
    assert_int_equal(hg_proc_bytes(proc, in, sizeof(in)), HG_SUCCESS);
    assert_int_equal(hg_proc_raw(proc, in, 3), HG_SUCCESS);
    assert_int_equal(hg_proc_memcpy(proc, NULL, 0), HG_SUCCESS);
    assert_int_equal(hg_proc_get_size_used(proc), sizeof(in) + 3);
    assert_int_equal(hg_proc_bytes(proc, NULL, 1), HG_INVALID_ARG);
    hg_proc_free(proc);
    assert_memory_equal(buf, in, sizeof(in));

    proc = new_proc(buf, sizeof(in) + 3, HG_DECODE, HG_NOHASH);
    assert_int_equal(hg_proc_bytes(proc, out, sizeof(out)), HG_SUCCESS);
    assert_int_equal(hg_proc_raw(proc, out2, 4), HG_OVERFLOW);
    assert_int_equal(hg_proc_raw(proc, out2, 3), HG_SUCCESS);
    hg_proc_free(proc);
    assert_memory_equal(out, in, sizeof(in));
    assert_memory_equal(out2, in, 3);
}

/* ---- strings ----------------------------------------------------------------- */

static void string_roundtrip(char *s, size_t buf_size)
{
    unsigned char *buf = malloc(buf_size);
    hg_string_t out = (char *)"garbage";
    hg_const_string_t cs = s, cout = "garbage";

    assert_non_null(buf);
    size_t used = encode(hg_proc_hg_string_t, &s, buf, buf_size);
    assert_int_equal(used, 8 + (s ? strlen(s) + 1 + 2 : 0)); /* + is_const, is_owned */
    assert_int_equal(decode(hg_proc_hg_string_t, &out, buf, used), HG_SUCCESS);
    assert_int_equal(encode(hg_proc_hg_const_string_t, &cs, buf, buf_size), used);
    assert_int_equal(decode(hg_proc_hg_const_string_t, &cout, buf, used), HG_SUCCESS);
    if (s == NULL) {
        assert_null(out);
        assert_null(cout);
    } else {
        assert_string_equal(out, s);
        assert_string_equal(cout, s);
        assert_ptr_not_equal(out, s);
    }
    free_value(hg_proc_hg_string_t, &out);
    free_value(hg_proc_hg_const_string_t, &cout);
    assert_null(out);
    assert_null(cout);
    free(buf);
}

static void test_strings(void **state)
{
    (void)state;
    const size_t long_len = 1 << 20;
    char *long_str = malloc(long_len + 1);

    assert_non_null(long_str);
    for (size_t i = 0; i < long_len; i++)
        long_str[i] = (char)('a' + i % 26);
    long_str[long_len] = '\0';

    string_roundtrip(NULL, 64);
    string_roundtrip((char *)"", 64);
    string_roundtrip((char *)"hello, mercury", 64);
    string_roundtrip(long_str, long_len + 64);
    free(long_str);
}

static void test_corrupt_strings(void **state)
{
    (void)state;
    unsigned char buf[64];
    hg_string_t out = (char *)"garbage";
    uint64_t len;

    /* Length beyond the buffer, including absurd ones: overflow, no allocation. */
    const uint64_t bad_lens[] = {UINT64_MAX, (uint64_t)1 << 40, 57};
    for (size_t i = 0; i < sizeof(bad_lens) / sizeof(*bad_lens); i++) {
        memset(buf, 'x', sizeof(buf));
        len = bad_lens[i];
        encode(hg_proc_uint64_t, &len, buf, sizeof(buf));
        assert_int_equal(decode(hg_proc_hg_string_t, &out, buf, sizeof(buf)),
                         HG_OVERFLOW);
        assert_null(out);
    }
    /* Fits, but not NUL-terminated. */
    len = 56;
    encode(hg_proc_uint64_t, &len, buf, sizeof(buf));
    assert_int_equal(decode(hg_proc_hg_string_t, &out, buf, sizeof(buf)),
                     HG_PROTOCOL_ERROR);
    assert_null(out);
    /* Terminated, but with a NUL inside. */
    buf[8 + 55] = '\0';
    buf[8 + 10] = '\0';
    assert_int_equal(decode(hg_proc_hg_string_t, &out, buf, sizeof(buf)),
                     HG_PROTOCOL_ERROR);
    assert_null(out);
    /* Repaired, but no room for the two flag bytes: overflow. */
    buf[8 + 10] = 'x';
    assert_int_equal(decode(hg_proc_hg_string_t, &out, buf, sizeof(buf)), HG_OVERFLOW);
    assert_null(out);
    /* Shorter by the flags: accepted. */
    len = 54;
    encode(hg_proc_uint64_t, &len, buf, sizeof(buf));
    buf[8 + 53] = '\0';
    assert_int_equal(decode(hg_proc_hg_string_t, &out, buf, sizeof(buf)), HG_SUCCESS);
    assert_int_equal(strlen(out), 53);
    free_value(hg_proc_hg_string_t, &out);
}

/* ---- generated structs ---------------------------------------------------------- */

static void test_gen_struct_roundtrip(void **state)
{
    (void)state;
    unsigned char buf[256];
    char name[32];
    big_in_t in, out;

    fill_big(&in, name, sizeof(name));
    size_t used = encode(hg_proc_big_in_t, &in, buf, sizeof(buf));
    /* 1+1+2+2+4+4+8+8 + 8+1+8 + (8+32+2) + (8+1+2) + (4+4) + 8; a string's two
     * bytes after its NUL are the is_const and is_owned flags */
    assert_int_equal(used, 30 + 17 + 42 + 11 + 8 + 8);
    memset(&out, 0xA5, sizeof(out));
    assert_int_equal(decode(hg_proc_big_in_t, &out, buf, used), HG_SUCCESS);
    assert_big_equal(&in, &out);
    free_value(hg_proc_big_in_t, &out);
    assert_null(out.name);
    assert_null(out.label);
}

static void test_gen_struct_proc(void **state)
{
    (void)state;
    unsigned char buf[64];
    handle_t in = {.cookie = 77, .path = (char *)"/tmp/x", .local_only = 5}, out;

    size_t used = encode(hg_proc_handle_t, &in, buf, sizeof(buf));
    assert_int_equal(used, 8 + 8 + 7 + 2);
    out.local_only = 99;
    assert_int_equal(decode(hg_proc_handle_t, &out, buf, used), HG_SUCCESS);
    assert_int_equal(out.cookie, 77);
    assert_string_equal(out.path, "/tmp/x");
    assert_int_equal(out.local_only, 99); /* not a listed field: untouched */
    free_value(hg_proc_handle_t, &out);
    assert_null(out.path);
}

static void test_gen_wide_struct(void **state)
{
    (void)state;
    unsigned char buf[128];
    wide_t in, out;
    unsigned char *bytes = (unsigned char *)&in;

    assert_int_equal(offsetof(wide_t, last), WIDE_BYTES);
    for (size_t i = 0; i < WIDE_BYTES; i++)
        bytes[i] = (unsigned char)(i + 1);
    in.last = (char *)"end";
    size_t used = encode(hg_proc_wide_t, &in, buf, sizeof(buf));
    assert_int_equal(used, WIDE_BYTES + 8 + 4 + 2);
    assert_int_equal(decode(hg_proc_wide_t, &out, buf, used), HG_SUCCESS);
    assert_memory_equal(&out, &in, WIDE_BYTES);
    assert_int_equal(out.i7, WIDE_BYTES);
    assert_string_equal(out.last, "end");
    free_value(hg_proc_wide_t, &out);
}

static void test_register_macro(void **state)
{
    (void)state;
    assert_int_equal(MERCURY_REGISTER(NULL, "rpc", big_in_t, point_t, NULL), 42);
    assert_ptr_equal(registered_in, hg_proc_big_in_t);
    assert_ptr_equal(registered_out, hg_proc_point_t);
    assert_int_equal(MERCURY_REGISTER(NULL, "rpc", void, void, NULL), 42);
    assert_null(registered_in);
    assert_null(registered_out);
    assert_int_equal(MARGO_LIKE_REGISTER(NULL, "rpc", point_t, big_in_t, NULL), 42);
    assert_ptr_equal(registered_in, hg_proc_point_t);
    assert_ptr_equal(registered_out, hg_proc_big_in_t);
    assert_int_equal(BOOST_PP_SEQ_SIZE(((int)(a))((int)(b))((int)(c))), 3);
}

/* Every truncation of a valid message fails cleanly, and nothing leaks (ASan/valgrind).
 */
static void test_decode_truncated(void **state)
{
    (void)state;
    unsigned char buf[256];
    char name[32];
    big_in_t in, out;

    fill_big(&in, name, sizeof(name));
    in.tail = (char *)"tail";
    size_t used = encode(hg_proc_big_in_t, &in, buf, sizeof(buf));
    for (size_t cut = 0; cut < used; cut++) {
        unsigned char *copy =
            malloc(cut ? cut : 1); /* exact size: ASan sees over-reads */
        assert_non_null(copy);
        memcpy(copy, buf, cut);
        memset(&out, 0xA5, sizeof(out));
        assert_int_equal(decode(hg_proc_big_in_t, &out, copy, cut), HG_OVERFLOW);
        assert_null(out.name);
        assert_null(out.label);
        assert_null(out.tail);
        free(copy);
    }
    assert_int_equal(decode(hg_proc_big_in_t, &out, buf, used), HG_SUCCESS);
    free_value(hg_proc_big_in_t, &out);
}

/* ---- extra buffer --------------------------------------------------------------- */

static void test_extra_buffer(void **state)
{
    (void)state;
    unsigned char small[16];
    char name[3000];
    big_in_t in, out;

    fill_big(&in, name, sizeof(name));
    hg_proc_t proc = new_proc(small, sizeof(small), HG_ENCODE, HG_CRC64);
    assert_int_equal(hg_proc_big_in_t(proc, &in), HG_SUCCESS);
    unsigned char *extra = hg_proc_get_extra_buf(proc);
    size_t used = (size_t)hg_proc_get_size_used(proc);
    assert_non_null(extra);
    assert_true(used > sizeof(small));
    assert_true(hg_proc_get_extra_size(proc) >= used);
    assert_int_equal(hg_proc_get_size(proc), hg_proc_get_extra_size(proc));
    /* The six small integers (14 bytes) went to small and were carried over. */
    assert_memory_equal(extra, small, 14);
    assert_int_equal(hg_proc_flush(proc), HG_SUCCESS);
    uint64_t sent_crc;
    assert_int_equal(hg_proc_checksum_get(proc, &sent_crc, sizeof(sent_crc)), HG_SUCCESS);
    assert_true(sent_crc == hgx_crc64(0, extra, used));

    /* Hand the buffer over (as HG does to send it by bulk); reset must not free it,
     * and the proc must not grow (move) it any more. */
    assert_int_equal(hg_proc_set_extra_buf_is_mine(proc, HG_TRUE), HG_SUCCESS);
    assert_int_equal(hg_proc_set_size(proc, hg_proc_get_size(proc) + 1), HG_INVALID_ARG);
    assert_ptr_equal(hg_proc_get_extra_buf(proc), extra);
    assert_int_equal(hg_proc_reset(proc, extra, used, HG_DECODE), HG_SUCCESS);
    assert_null(hg_proc_get_extra_buf(proc));
    assert_int_equal(hg_proc_big_in_t(proc, &out), HG_SUCCESS);
    assert_int_equal(hg_proc_flush(proc), HG_SUCCESS);
    assert_int_equal(hg_proc_checksum_verify(proc, &sent_crc, sizeof(sent_crc)),
                     HG_SUCCESS);
    assert_big_equal(&in, &out);
    assert_int_equal(hgx_proc_undo_decode(proc, hg_proc_big_in_t, &out), HG_SUCCESS);
    assert_null(out.name);
    assert_int_equal(hg_proc_get_op(proc), HG_DECODE);
    hg_proc_free(proc);
    free(extra);
}

static void test_set_size_and_ptrs(void **state)
{
    (void)state;
    unsigned char buf[8];
    uint32_t v = 0x11223344;

    hg_proc_t proc = new_proc(buf, sizeof(buf), HG_ENCODE, HG_CRC64);
    assert_int_equal(hg_proc_uint32_t(proc, &v), HG_SUCCESS);
    assert_int_equal(hg_proc_set_size(proc, 4), HG_SUCCESS); /* already that large */
    assert_null(hg_proc_get_extra_buf(proc));
    assert_int_equal(hg_proc_set_size(proc, 100), HG_SUCCESS);
    assert_non_null(hg_proc_get_extra_buf(proc));
    assert_true(hg_proc_get_size(proc) >= 100);
    assert_int_equal(hg_proc_get_size_used(proc), 4);

    /* Manual encoding through save/restore_ptr, with a field encoded in between. */
    unsigned char *p = hg_proc_save_ptr(proc, 5);
    assert_non_null(p);
    assert_int_equal(hg_proc_uint32_t(proc, &v), HG_SUCCESS);
    memcpy(p, "abcde", 5);
    assert_int_equal(hg_proc_restore_ptr(proc, p, 5), HG_SUCCESS);
    assert_int_equal(hg_proc_flush(proc), HG_SUCCESS);
    /* The checksum sees the saved bytes when restored: after the later field. */
    unsigned char *all = hg_proc_get_extra_buf(proc);
    uint64_t expect = hgx_crc64(hgx_crc64(hgx_crc64(0, all, 4), all + 9, 4), all + 4, 5);
    uint64_t got;
    assert_int_equal(hg_proc_checksum_get(proc, &got, sizeof(got)), HG_SUCCESS);
    assert_true(got == expect);

    /* Decoding: save_ptr never passes the end. */
    assert_int_equal(hg_proc_reset(proc, buf, 4, HG_DECODE), HG_SUCCESS);
    assert_null(hg_proc_get_extra_buf(proc)); /* freed: the proc owned it */
    assert_null(hg_proc_save_ptr(proc, 5));
    assert_ptr_equal(hg_proc_save_ptr(proc, 4), buf);
    assert_int_equal(hg_proc_set_size(proc, 100), HG_INVALID_ARG);
    hg_proc_free(proc);
}

/* ---- checksums ------------------------------------------------------------------ */

static void test_checksum(void **state)
{
    (void)state;
    unsigned char buf[256];
    char name[32];
    big_in_t in, out;
    uint64_t crc64, bad;
    uint32_t crc32;
    uint16_t crc16;

    fill_big(&in, name, sizeof(name));
    hg_proc_t proc = new_proc(buf, sizeof(buf), HG_ENCODE, HG_CRC64);
    assert_int_equal(hg_proc_checksum_size(proc), 8);
    assert_int_equal(hg_proc_big_in_t(proc, &in), HG_SUCCESS);
    size_t used = (size_t)hg_proc_get_size_used(proc);
    assert_int_equal(hg_proc_flush(proc), HG_SUCCESS);
    assert_int_equal(hg_proc_checksum_get(proc, &crc32, sizeof(crc32)), HG_INVALID_ARG);
    assert_int_equal(hg_proc_checksum_get(proc, &crc64, sizeof(crc64)), HG_SUCCESS);
    assert_true(crc64 == hgx_crc64(0, buf, used)); /* CRC of the payload bytes */
    hg_proc_free(proc);

    /* Receiver: same data verifies. */
    proc = new_proc(buf, used, HG_DECODE, HG_CRC64);
    assert_int_equal(hg_proc_big_in_t(proc, &out), HG_SUCCESS);
    assert_int_equal(hg_proc_flush(proc), HG_SUCCESS);
    assert_int_equal(hg_proc_checksum_verify(proc, &crc64, sizeof(crc64)), HG_SUCCESS);
    bad = crc64 ^ 1;
    assert_int_equal(hg_proc_checksum_verify(proc, &bad, sizeof(bad)), HG_CHECKSUM_ERROR);
    free_value(hg_proc_big_in_t, &out);

    /* One flipped bit in the payload (still decodable): mismatch. */
    buf[5] ^= 0x10;
    assert_int_equal(hg_proc_reset(proc, buf, used, HG_DECODE), HG_SUCCESS);
    assert_int_equal(hg_proc_big_in_t(proc, &out), HG_SUCCESS);
    assert_int_equal(hg_proc_flush(proc), HG_SUCCESS);
    assert_int_equal(hg_proc_checksum_verify(proc, &crc64, sizeof(crc64)),
                     HG_CHECKSUM_ERROR);
    free_value(hg_proc_big_in_t, &out);
    buf[5] ^= 0x10;
    hg_proc_free(proc);

    /* Narrower methods give the low bits of the same CRC. */
    proc = new_proc(buf, used, HG_DECODE, HG_CRC32);
    assert_int_equal(hg_proc_big_in_t(proc, &out), HG_SUCCESS);
    assert_int_equal(hg_proc_flush(proc), HG_SUCCESS);
    assert_int_equal(hg_proc_checksum_get(proc, &crc32, sizeof(crc32)), HG_SUCCESS);
    assert_true(crc32 == (uint32_t)crc64);
    free_value(hg_proc_big_in_t, &out);
    hg_proc_free(proc);
    proc = new_proc(buf, used, HG_DECODE, HG_CRC16);
    assert_int_equal(hg_proc_big_in_t(proc, &out), HG_SUCCESS);
    assert_int_equal(hg_proc_flush(proc), HG_SUCCESS);
    assert_int_equal(hg_proc_checksum_verify(proc, &crc64, sizeof(crc16)), HG_SUCCESS);
    free_value(hg_proc_big_in_t, &out);
    hg_proc_free(proc);

    /* No hash: nothing to get or verify; updates are ignored. */
    proc = new_proc(buf, used, HG_DECODE, HG_NOHASH);
    assert_int_equal(hg_proc_checksum_size(proc), 0);
    hg_proc_checksum_update(proc, buf, 4);
    assert_int_equal(hg_proc_flush(proc), HG_SUCCESS);
    assert_int_equal(hg_proc_checksum_get(proc, &crc64, sizeof(crc64)), HG_INVALID_ARG);
    assert_int_equal(hg_proc_checksum_verify(proc, &crc64, sizeof(crc64)),
                     HG_INVALID_ARG);
    hg_proc_free(proc);
}

/* ---- public types ------------------------------------------------------------------ */

static void test_types(void **state)
{
    (void)state;
    struct hg_init_info info = HG_INIT_INFO_INITIALIZER;

    /* Mercury 2.4 numbering (programs may store or print the values). */
    assert_int_equal(HG_SUCCESS, 0);
    assert_int_equal(HG_OVERFLOW, 13);
    assert_int_equal(HG_HOSTUNREACH, 19);
    assert_int_equal(HG_IO_ERROR, 22);
    assert_int_equal(HG_CHECKSUM_ERROR, 23);
    assert_int_equal(HG_RETURN_MAX, 26);
    assert_int_equal(info.checksum_level, HG_CHECKSUM_NONE);
    assert_int_equal(info.na_init_info.max_contexts, 1);
    assert_null(info.na_class);
    assert_int_equal(sizeof(hg_size_t), 8);
    assert_int_equal(sizeof(hg_id_t), 8);
    assert_int_equal(sizeof(hg_bool_t), 1);
    assert_int_equal(HG_BULK_READWRITE, HG_BULK_READ_ONLY | HG_BULK_WRITE_ONLY);
    assert_ptr_equal(HG_OP_ID_IGNORE, (hg_op_id_t *)1);
}

/* ---- misc API --------------------------------------------------------------------- */

static void test_api_edges(void **state)
{
    (void)state;
    unsigned char buf[16];
    hg_proc_t proc = HG_PROC_NULL;
    uint8_t v = 1;

    assert_int_equal(hg_proc_create(NULL, HG_CRC64, NULL), HG_INVALID_ARG);
    assert_int_equal(hg_proc_create(NULL, (hg_proc_hash_t)17, &proc), HG_INVALID_ARG);
    assert_int_equal(hg_proc_create_set(NULL, NULL, 16, HG_ENCODE, HG_NOHASH, &proc),
                     HG_INVALID_ARG);
    assert_int_equal(hg_proc_reset(HG_PROC_NULL, buf, 16, HG_ENCODE), HG_INVALID_ARG);
    assert_int_equal(hg_proc_uint8_t(HG_PROC_NULL, &v), HG_INVALID_ARG);
    assert_int_equal(hg_proc_flush(HG_PROC_NULL), HG_INVALID_ARG);
    assert_null(hg_proc_save_ptr(HG_PROC_NULL, 1));
    assert_int_equal(hg_proc_free(HG_PROC_NULL), HG_SUCCESS);

    hg_class_t *cls = (hg_class_t *)&v; /* never dereferenced */
    assert_int_equal(hg_proc_create(cls, HG_CRC64, &proc), HG_SUCCESS);
    assert_ptr_equal(hg_proc_get_class(proc), cls);
    assert_null(hg_proc_get_handle(proc));
    hg_proc_set_handle(proc, (hg_handle_t)buf);
    assert_ptr_equal(hg_proc_get_handle(proc), buf);
    assert_int_equal(hg_proc_reset(proc, buf, sizeof(buf), (hg_proc_op_t)7),
                     HG_INVALID_ARG);
    assert_int_equal(hg_proc_reset(proc, buf, sizeof(buf), HG_ENCODE), HG_SUCCESS);
    hg_proc_set_flags(proc, HG_PROC_SM | HG_PROC_BULK_EAGER);
    assert_int_equal(hg_proc_get_flags(proc), HG_PROC_SM | HG_PROC_BULK_EAGER);
    assert_int_equal(hg_proc_set_extra_buf_is_mine(proc, HG_TRUE), HG_INVALID_ARG);
    assert_int_equal(hg_proc_reset(proc, NULL, 0, HG_FREE), HG_SUCCESS);
    assert_int_equal(hg_proc_get_flags(proc), 0);
    /* HG_FREE on plain values is a no-op and touches no buffer. */
    assert_int_equal(hg_proc_uint64_t(proc, &(uint64_t){1}), HG_SUCCESS);
    assert_int_equal(hg_proc_bytes(proc, buf, sizeof(buf)), HG_SUCCESS);
    assert_null(hg_proc_save_ptr(proc, 1));
    assert_int_equal(hg_proc_restore_ptr(proc, buf, 1), HG_INVALID_ARG);
    hg_proc_free(proc);
}

int main(void)
{
    /* Many tests provoke errors on purpose; show their log lines only on request. */
    if (getenv("HGX_TEST_LOG") == NULL)
        hgx_log_set_level("proc", "none");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc64_check_value),
        cmocka_unit_test(test_crc64_sw_matches_default),
        cmocka_unit_test(test_fixed_width_roundtrip),
        cmocka_unit_test(test_raw_and_bytes),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_corrupt_strings),
        cmocka_unit_test(test_gen_struct_roundtrip),
        cmocka_unit_test(test_gen_struct_proc),
        cmocka_unit_test(test_gen_wide_struct),
        cmocka_unit_test(test_register_macro),
        cmocka_unit_test(test_decode_truncated),
        cmocka_unit_test(test_extra_buffer),
        cmocka_unit_test(test_set_size_and_ptrs),
        cmocka_unit_test(test_checksum),
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_api_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

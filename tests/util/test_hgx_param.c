/*
 * test_hgx_param.c -- typed parameters: defaults, valid values at the range
 * ends, and bad values (not a number, out of range, bad suffix) that fall
 * back to the default with a log line naming the variable.
 */
#include "hgx_param.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>

#include <cmocka.h>

static const struct hgx_param p_int = {
    .name = "HGX_TEST_INT", .type = HGX_PARAM_INT, .def = 7, .min = -5, .max = 100};
static const struct hgx_param p_bool = {
    .name = "HGX_TEST_BOOL", .type = HGX_PARAM_BOOL, .def = 1};
static const struct hgx_param p_size = {.name = "HGX_TEST_SIZE",
                                        .type = HGX_PARAM_SIZE,
                                        .def = 4096,
                                        .min = 1,
                                        .max = (int64_t)1 << 32};
static const struct hgx_param p_str = {
    .name = "HGX_TEST_STR", .type = HGX_PARAM_STRING, .def_string = "dflt"};

/* What reading param with its variable set to value logged on stderr. */
static char logged[2048];

static int64_t read_with(const struct hgx_param *param, const char *value)
{
    if (value)
        setenv(param->name, value, 1);
    else
        unsetenv(param->name);
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    int64_t v = 0;
    switch (param->type) {
    case HGX_PARAM_INT:
        v = hgx_param_get_int(param);
        break;
    case HGX_PARAM_BOOL:
        v = hgx_param_get_bool(param);
        break;
    case HGX_PARAM_SIZE:
        v = (int64_t)hgx_param_get_size(param);
        break;
    case HGX_PARAM_STRING:
        v = strcmp(hgx_param_get_string(param), "dflt") == 0;
        break;
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(logged, 1, sizeof(logged) - 1, tmp);
    logged[n] = '\0';
    fclose(tmp);
    return v;
}

static void expect_bad(const struct hgx_param *param, const char *value, int64_t def)
{
    assert_int_equal(read_with(param, value), def);
    assert_non_null(strstr(logged, param->name));
    assert_non_null(strstr(logged, value));
    assert_non_null(strstr(logged, "default"));
}

static void test_int(void **state)
{
    (void)state;
    assert_int_equal(read_with(&p_int, NULL), 7);
    assert_int_equal(read_with(&p_int, ""), 7);
    assert_int_equal(read_with(&p_int, "100"), 100);
    assert_int_equal(read_with(&p_int, "-5"), -5);
    assert_string_equal(logged, "");
    expect_bad(&p_int, "101", 7);
    expect_bad(&p_int, "-6", 7);
    expect_bad(&p_int, "12abc", 7);
    expect_bad(&p_int, "abc", 7);
    expect_bad(&p_int, "99999999999999999999999", 7);
    expect_bad(&p_int, "1k", 7); /* suffixes are for sizes */
}

static void test_bool(void **state)
{
    (void)state;
    assert_int_equal(read_with(&p_bool, NULL), 1);
    assert_int_equal(read_with(&p_bool, "0"), 0);
    assert_int_equal(read_with(&p_bool, "off"), 0);
    assert_int_equal(read_with(&p_bool, "NO"), 0);
    assert_int_equal(read_with(&p_bool, "yes"), 1);
    assert_int_equal(read_with(&p_bool, "True"), 1);
    expect_bad(&p_bool, "maybe", 1);
}

static void test_size(void **state)
{
    (void)state;
    assert_int_equal(read_with(&p_size, NULL), 4096);
    assert_int_equal(read_with(&p_size, "12"), 12);
    assert_int_equal(read_with(&p_size, "8k"), 8192);
    assert_int_equal(read_with(&p_size, "2M"), 2 << 20);
    assert_int_equal(read_with(&p_size, "4g"), (int64_t)4 << 30);
    expect_bad(&p_size, "0", 4096);
    expect_bad(&p_size, "5g", 4096);
    expect_bad(&p_size, "3kb", 4096);
    expect_bad(&p_size, "3t", 4096);
    expect_bad(&p_size, "9223372036854775807k", 4096);
}

static void test_string(void **state)
{
    (void)state;
    assert_int_equal(read_with(&p_str, NULL), 1);
    assert_int_equal(read_with(&p_str, "other"), 0);
    setenv("HGX_TEST_STR", "value", 1);
    assert_string_equal(hgx_param_get_string(&p_str), "value");
}

static void test_core_list(void **state)
{
    (void)state;
    size_t n = 0;
    for (const struct hgx_param *const *p = hgx_core_params; *p; p++, n++) {
        assert_non_null((*p)->name);
        assert_non_null((*p)->help);
        if ((*p)->type == HGX_PARAM_INT || (*p)->type == HGX_PARAM_SIZE)
            assert_true((*p)->min <= (*p)->def && (*p)->def <= (*p)->max);
    }
    assert_true(n >= 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int),       cmocka_unit_test(test_bool),
        cmocka_unit_test(test_size),      cmocka_unit_test(test_string),
        cmocka_unit_test(test_core_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

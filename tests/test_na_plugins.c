/*
 * test_na_plugins.c -- the plugin table configure builds: every built plugin
 * brings a name, a protocol list and a log subsystem below "na" through its
 * ops table, and the core lists and accepts exactly those protocols.
 */
#include "na_plugin.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <setjmp.h>

#include <cmocka.h>

/* Entries of NA_Get_protocol_info(filter) equal to plugin+protocol. */
static int listed(const char *filter, const char *plugin, const char *protocol)
{
    struct na_protocol_info *info = NULL;
    assert_int_equal(NA_Get_protocol_info(filter, &info), NA_SUCCESS);
    int n = 0;
    for (struct na_protocol_info *e = info; e; e = e->next)
        if (strcmp(e->class_name, plugin) == 0 && strcmp(e->protocol_name, protocol) == 0)
            n++;
    NA_Free_protocol_info(info);
    return n;
}

static void test_table(void **state)
{
    (void)state;
    size_t plugins = 0, total = 0;
    for (const struct na_ops *const *p = na_plugin_table; *p; p++, plugins++) {
        const struct na_ops *ops = *p;
        assert_non_null(ops->class_name);
        assert_non_null(ops->protocols);
        assert_non_null(ops->protocols[0]);
        /* The plugin's subsystem is muted with "na" and is not "na" itself. */
        assert_true(ops->log_subsys > HGX_SUBSYS_NA && ops->log_subsys < HGX_SUBSYS_MAX);
        hgx_log_set_level("na", "none");
        assert_false(hgx_log_enabled(ops->log_subsys, HGX_LOG_ERROR));
        hgx_log_set_level("na", "error");
        assert_true(hgx_log_enabled(ops->log_subsys, HGX_LOG_ERROR));
        /* Names are unique. */
        for (const struct na_ops *const *q = na_plugin_table; q != p; q++)
            assert_string_not_equal((*q)->class_name, ops->class_name);
        for (const char *const *proto = ops->protocols; *proto; proto++, total++) {
            assert_true(na_plugin_has_protocol(ops, *proto));
            assert_int_equal(listed(NULL, ops->class_name, *proto), 1);
            assert_int_equal(listed(ops->class_name, ops->class_name, *proto), 1);
        }
        assert_false(na_plugin_has_protocol(ops, "no-such-protocol"));
    }
    /* Nothing listed that no table declares. */
    struct na_protocol_info *info = NULL;
    size_t n = 0;
    assert_int_equal(NA_Get_protocol_info(NULL, &info), NA_SUCCESS);
    for (struct na_protocol_info *e = info; e; e = e->next)
        n++;
    NA_Free_protocol_info(info);
    assert_int_equal(n, total);
    print_message("%zu plugin(s), %zu protocol(s)\n", plugins, total);
}

/* An info string naming a protocol its plugin does not declare is refused. */
static void test_refused(void **state)
{
    (void)state;
    hgx_log_set_level("na", "none"); /* the refusals are expected */
    for (const struct na_ops *const *p = na_plugin_table; *p; p++) {
        char info[64];
        snprintf(info, sizeof(info), "%s+no-such-protocol", (*p)->class_name);
        assert_null(NA_Initialize(info, false));
    }
    assert_null(NA_Initialize("no-such-plugin+tcp", false));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

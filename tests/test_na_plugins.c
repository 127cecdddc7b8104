/*
 * test_na_plugins.c -- the plugin table configure builds: every built plugin
 * brings a name, a protocol list, its aliases and a log subsystem below "na"
 * through its ops table, and the core lists and accepts exactly those
 * protocols, and each alias once.
 */
#include "na_alias.h"

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
        /* An alias is served by one of the plugin's protocols, is listed
         * once whichever plugins declare it, and names no plugin. */
        for (const struct na_alias *a = ops->aliases; a && a->class_name; a++) {
            const struct na_ops *server = NULL;
            const struct na_alias *best =
                na_alias_find(a->class_name, a->protocol, &server);
            assert_true(na_plugin_has_protocol(ops, a->serves));
            assert_non_null(best);
            assert_true(best->rank >= a->rank);
            assert_int_equal(listed(NULL, a->class_name, a->protocol), 1);
            for (const struct na_ops *const *q = na_plugin_table; *q; q++)
                assert_string_not_equal((*q)->class_name, a->class_name);
            total += server == ops;
        }
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

/* A class made with alias a (served by ops) answers the alias's names, and
 * its addresses read in them both ways; the serving plugin's names are
 * foreign to it. */
static void check_alias(const struct na_alias *a, const struct na_ops *ops)
{
    char info[64], name[320], str[256];
    size_t len = sizeof(str);
    na_addr_t *self = NULL, *addr = NULL;

    snprintf(info, sizeof(info), "%s+%s", a->class_name, a->protocol);
    na_class_t *cls = NA_Initialize(info, true);
    assert_non_null(cls);
    assert_string_equal(NA_Get_class_name(cls), a->class_name);
    assert_string_equal(NA_Get_class_protocol(cls), a->protocol);
    assert_int_equal(NA_Addr_self(cls, &self), NA_SUCCESS);
    assert_int_equal(NA_Addr_to_string(cls, str, &len, self), NA_SUCCESS);
    print_message("%s: %s, served by %s+%s\n", info, str, ops->class_name, a->serves);
    assert_int_equal(strncmp(str, info, strlen(info)), 0);
    const char *rest = str + strlen(info);
    assert_int_equal(strncmp(rest, "://", 3), 0);
    assert_int_equal(NA_Addr_lookup(cls, str, &addr), NA_SUCCESS);
    assert_true(NA_Addr_cmp(cls, addr, self));
    NA_Addr_free(cls, addr);
    snprintf(name, sizeof(name), "%s%s", a->protocol, rest); /* the bare form */
    assert_int_equal(NA_Addr_lookup(cls, name, &addr), NA_SUCCESS);
    assert_true(NA_Addr_cmp(cls, addr, self));
    NA_Addr_free(cls, addr);
    hgx_log_set_level("na", "none"); /* the refusals are expected */
    snprintf(name, sizeof(name), "%s+%s%s", ops->class_name, a->serves, rest);
    assert_int_equal(NA_Addr_lookup(cls, name, &addr), NA_PROTONOSUPPORT);
    assert_int_equal(NA_Addr_lookup(cls, strchr(name, '+') + 1, &addr),
                     NA_PROTONOSUPPORT);
    hgx_log_set_level("na", "error");
    NA_Addr_free(cls, self);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);

    /* Mercury's other spellings: the protocol alone, and an empty host. */
    char spellings[3][80];
    snprintf(spellings[0], sizeof(spellings[0]), "%s", a->protocol);
    snprintf(spellings[1], sizeof(spellings[1]), "%s://", a->protocol);
    snprintf(spellings[2], sizeof(spellings[2]), "%s://", info);
    for (size_t i = 0; i < 3; i++) {
        cls = NA_Initialize(spellings[i], false);
        assert_non_null(cls);
        assert_string_equal(NA_Get_class_name(cls), a->class_name);
        assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
    }
}

/* Every alias of the build, as the plugin serving it makes it. */
static void test_aliases(void **state)
{
    (void)state;
    size_t n = 0;
    for (const struct na_ops *const *p = na_plugin_table; *p; p++)
        for (const struct na_alias *a = (*p)->aliases; a && a->class_name; a++) {
            const struct na_ops *server = NULL;
            if (na_alias_find(a->class_name, a->protocol, &server) == a) {
                check_alias(a, server);
                n++;
            }
        }
    if (n == 0)
        skip(); /* no built plugin declares an alias */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_aliases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

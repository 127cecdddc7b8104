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
         * once whichever plugins declare it, and names no plugin but the one
         * declaring it (then it is another spelling of that protocol). */
        for (const struct na_alias *a = ops->aliases; a && a->class_name; a++) {
            const struct na_ops *server = NULL;
            const struct na_alias *best =
                na_alias_find(a->class_name, a->protocol, &server);
            assert_true(na_plugin_has_protocol(ops, a->serves));
            assert_non_null(best);
            assert_true(best->rank >= a->rank);
            assert_int_equal(listed(NULL, a->class_name, a->protocol), 1);
            for (const struct na_ops *const *q = na_plugin_table; *q; q++)
                if (*q != ops)
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

static void count_done(const struct na_cb_info *info)
{
    if (info->ret == NA_SUCCESS)
        ++*(int *)info->arg;
}

/* An alias in its plugin's own name: a class of the served protocol looks up
 * the alias class (cls)'s address (alias_str) and its own form of it
 * (plain_str) as the same peer, and a message it sends there arrives. */
static void check_spelling(const struct na_alias *a, na_class_t *cls,
                           const char *alias_str, const char *plain_str)
{
    char info[64];
    na_addr_t *x = NULL, *y = NULL;
    int done = 0;

    snprintf(info, sizeof(info), "%s+%s", a->class_name, a->serves);
    na_class_t *plain = NA_Initialize(info, false);
    assert_non_null(plain);
    assert_string_equal(NA_Get_class_protocol(plain), a->serves);
    assert_int_equal(NA_Addr_lookup(plain, alias_str, &x), NA_SUCCESS);
    assert_int_equal(NA_Addr_lookup(plain, plain_str, &y), NA_SUCCESS);
    assert_true(NA_Addr_cmp(plain, x, y));

    na_context_t *pctx = NA_Context_create(plain), *actx = NA_Context_create(cls);
    assert_non_null(pctx);
    assert_non_null(actx);
    size_t size = NA_Msg_get_max_unexpected_size(plain);
    void *pdata = NULL, *rdata = NULL;
    char *sbuf = NA_Msg_buf_alloc(plain, size, NA_SEND, &pdata);
    char *rbuf =
        NA_Msg_buf_alloc(cls, NA_Msg_get_max_unexpected_size(cls), NA_RECV, &rdata);
    assert_non_null(sbuf);
    assert_non_null(rbuf);
    assert_int_equal(NA_Msg_init_unexpected(plain, sbuf, size), NA_SUCCESS);
    size_t header = NA_Msg_get_unexpected_header_size(plain);
    strcpy(sbuf + header, "spelled");
    na_op_id_t *rop = NA_Op_create(cls, 0), *sop = NA_Op_create(plain, 0);
    assert_int_equal(NA_Msg_recv_unexpected(cls, actx, count_done, &done, rbuf,
                                            NA_Msg_get_max_unexpected_size(cls), rdata,
                                            rop),
                     NA_SUCCESS);
    assert_int_equal(NA_Msg_send_unexpected(plain, pctx, count_done, &done, sbuf,
                                            header + 8, pdata, x, 0, 7, sop),
                     NA_SUCCESS);
    for (int i = 0; i < 2000 && done < 2; i++) {
        NA_Progress(plain, pctx, 1);
        NA_Trigger(pctx, 4, NULL);
        NA_Progress(cls, actx, 1);
        NA_Trigger(actx, 4, NULL);
    }
    assert_int_equal(done, 2);
    assert_string_equal(rbuf + NA_Msg_get_unexpected_header_size(cls), "spelled");
    NA_Op_destroy(cls, rop);
    NA_Op_destroy(plain, sop);
    NA_Msg_buf_free(plain, sbuf, pdata);
    NA_Msg_buf_free(cls, rbuf, rdata);
    NA_Addr_free(plain, x);
    NA_Addr_free(plain, y);
    assert_int_equal(NA_Context_destroy(plain, pctx), NA_SUCCESS);
    assert_int_equal(NA_Context_destroy(cls, actx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(plain), NA_SUCCESS);
}

/* A class made with alias a (served by ops) answers the alias's names, and
 * its addresses read in them both ways; the serving plugin's names are
 * foreign to it, unless the alias is in the plugin's own name (another
 * spelling of its protocol, as "ofi+tcp;ofi_rxm"): then a class of the
 * plugin's protocol and the alias class each take the other's names. */
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
    snprintf(name, sizeof(name), "%s+%s%s", ops->class_name, a->serves, rest);
    if (strcmp(a->class_name, ops->class_name) == 0) {
        assert_int_equal(NA_Addr_lookup(cls, name, &addr), NA_SUCCESS);
        assert_true(NA_Addr_cmp(cls, addr, self));
        NA_Addr_free(cls, addr);
        check_spelling(a, cls, str, name);
    } else {
        hgx_log_set_level("na", "none"); /* the refusals are expected */
        assert_int_equal(NA_Addr_lookup(cls, name, &addr), NA_PROTONOSUPPORT);
        assert_int_equal(NA_Addr_lookup(cls, strchr(name, '+') + 1, &addr),
                         NA_PROTONOSUPPORT);
        hgx_log_set_level("na", "error");
    }
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

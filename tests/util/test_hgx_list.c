/*
 * test_hgx_list.c -- intrusive lists: order, removal while walking, unlinked
 * links, and the element from its link.
 */
#include "hgx_list.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <setjmp.h>

#include <cmocka.h>

struct item {
    int value;
    struct hgx_list link;
};

/* The values of the list, first to last, into out; their count. */
static int values(struct hgx_list *head, int *out)
{
    struct hgx_list *it;
    int n = 0;
    hgx_list_for_each(it, head) out[n++] = hgx_list_entry(it, struct item, link)->value;
    return n;
}

static void test_order(void **state)
{
    (void)state;
    struct hgx_list head;
    struct item a = {1, {0}}, b = {2, {0}}, c = {3, {0}};
    int v[3];
    hgx_list_init(&head);
    assert_true(hgx_list_empty(&head));
    assert_null(hgx_list_first(&head));
    hgx_list_push_back(&head, &b.link);
    hgx_list_push_front(&head, &a.link);
    hgx_list_push_back(&head, &c.link);
    assert_false(hgx_list_empty(&head));
    assert_int_equal(values(&head, v), 3);
    assert_int_equal(v[0], 1);
    assert_int_equal(v[1], 2);
    assert_int_equal(v[2], 3);
    assert_ptr_equal(hgx_list_entry(hgx_list_first(&head), struct item, link), &a);
}

static void test_remove(void **state)
{
    (void)state;
    struct hgx_list head, *it, *tmp;
    struct item items[5];
    int v[5];
    hgx_list_init(&head);
    for (int i = 0; i < 5; i++) {
        items[i].value = i;
        hgx_list_init(&items[i].link);
        assert_false(hgx_list_linked(&items[i].link));
        hgx_list_push_back(&head, &items[i].link);
        assert_true(hgx_list_linked(&items[i].link));
    }
    /* Remove the even ones while walking. */
    hgx_list_for_each_safe(
        it, tmp, &head) if (hgx_list_entry(it, struct item, link)->value % 2 == 0)
        hgx_list_remove(it);
    assert_int_equal(values(&head, v), 2);
    assert_int_equal(v[0], 1);
    assert_int_equal(v[1], 3);
    assert_false(hgx_list_linked(&items[0].link));
    /* A second removal of an unlinked link changes nothing. */
    hgx_list_remove(&items[0].link);
    assert_int_equal(values(&head, v), 2);
    assert_ptr_equal(hgx_list_pop_front(&head), &items[1].link);
    assert_ptr_equal(hgx_list_pop_front(&head), &items[3].link);
    assert_null(hgx_list_pop_front(&head));
    assert_true(hgx_list_empty(&head));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

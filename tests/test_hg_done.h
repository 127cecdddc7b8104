/*
 * test_hg_done.h -- the completion record of one HG operation (a forward, a
 * bulk transfer), filled in by its callback, for tests that progress until
 * it is done.
 */
#ifndef TEST_HG_DONE_H
#define TEST_HG_DONE_H

#include "mercury.h"

struct test_hg_done {
    int calls;       /* how many times the callback ran: 1 once done */
    hg_return_t ret; /* the operation's result, once done */
};

/* An HG callback with a struct test_hg_done as its argument: records the
 * result and counts the call. Returns HG_SUCCESS. */
hg_return_t test_hg_done_cb(const struct hg_cb_info *info);

#endif /* TEST_HG_DONE_H */

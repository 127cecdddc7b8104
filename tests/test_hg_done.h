/*
 * test_hg_done.h -- the completion record of one HG operation (a forward, a
 * bulk transfer), filled in by its callback, for tests that progress until
 * it is done; and a request class (mercury_request.h) for tests that wait
 * with hg_request_wait instead.
 */
#ifndef TEST_HG_DONE_H
#define TEST_HG_DONE_H

#include "mercury.h"
#include "mercury_request.h"

struct test_hg_done {
    int calls;       /* how many times the callback ran: 1 once done */
    hg_return_t ret; /* the operation's result, once done */
};

/* An HG callback with a struct test_hg_done as its argument: records the
 * result and counts the call. Returns HG_SUCCESS. */
hg_return_t test_hg_done_cb(const struct hg_cb_info *info);

/* A request class whose waits progress and trigger context, as Mercury's
 * test harness makes one (HG_Progress, and HG_Trigger of one callback). */
hg_request_class_t *test_hg_request_class(hg_context_t *context);

#endif /* TEST_HG_DONE_H */

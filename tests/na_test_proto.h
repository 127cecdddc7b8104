/*
 * na_test_proto.h -- the small command protocol the NA tests speak to their
 * forked server, and helpers both sides use to drive NA.
 */
#ifndef NA_TEST_PROTO_H
#define NA_TEST_PROTO_H

#include "na.h"
#include "test_common.h"

enum na_test_cmd_op {
    CMD_ECHO = 1,  /* reply with the payload */
    CMD_EXPOSE,    /* a = size, b = flags | (segmented << 8): reply with a handle */
    CMD_VERIFY,    /* a = seed: reply 1 if the exposed region holds pattern(seed) */
    CMD_BIG_REPLY, /* a = size: reply with an expected message of that size */
    CMD_STALL,     /* a = ms: stop progressing for that long */
    CMD_QUIT,
};

struct na_test_cmd {
    uint32_t op;
    uint32_t tag; /* tag of the expected reply */
    uint64_t a, b;
};

#define NA_TEST_SEED_SERVER 7u

/* Completion record filled by na_test_cb. */
struct na_test_done {
    int count; /* times the callback ran */
    na_return_t ret;
    size_t size;
    na_addr_t *source;
    na_tag_t tag;
};

void na_test_cb(const struct na_cb_info *info);
/* Progress and trigger until done->count >= n or timeout; true if reached. */
bool na_test_wait(na_class_t *cls, na_context_t *ctx, struct na_test_done *done, int n,
                  unsigned int timeout_ms);

/* Send a full-size unexpected message (payload filled from seed) to self
 * with tag, using the op ids given, and check that it arrives whole: size,
 * tag, source self and data. True when every check held. */
bool na_test_self_message(na_class_t *cls, na_context_t *ctx, na_addr_t *self,
                          na_op_id_t *rop, na_op_id_t *sop, na_tag_t tag,
                          unsigned int seed);

/* The server child for test_server_start(). */
int na_test_server_main(const char *info, int publish_fd);

#endif /* NA_TEST_PROTO_H */

/*
 * na_conformance.h -- the NA conformance test: every call of the public NA
 * API with edge-case input, run on each transport built, each case expecting
 * one answer that every plugin must give. The cases are grouped by part of
 * the API, one file each; this header is what they share.
 */
#ifndef NA_CONFORMANCE_H
#define NA_CONFORMANCE_H

#include "na_test_proto.h"

#include <stdbool.h>

/* What the cases run against: the class under test, listening, with its
 * context and own address, and a second class of the same transport whose
 * context, address, buffers and handles count as foreign to the first. */
struct conf {
    const char *info;
    na_class_t *cls, *other;
    na_context_t *ctx, *octx;
    na_addr_t *self, *oself;
};

/* Record a case: the code it got against the one every plugin must give. */
void conf_code(const struct conf *c, const char *name, na_return_t got, na_return_t want);

/* Record a case whose answer is not a return code (a NULL result, a size). */
void conf_true(const struct conf *c, const char *name, bool ok, const char *detail);

/* Say that a case does not apply to this class, and why (printed, not counted). */
void conf_na(const struct conf *c, const char *name, const char *why);

/* Complete a posted operation: posted itself when the post was refused,
 * otherwise the code its callback got (NA_TIMEOUT if it did not run in 10 s,
 * after which the operation is cancelled and waited for once more). */
na_return_t conf_finish(const struct conf *c, na_return_t posted, na_op_id_t *op,
                        struct na_test_done *d);

/* Progress cls/ctx until nothing more completes for a moment, so that a case
 * starts with an empty completion queue. */
void conf_drain(na_class_t *cls, na_context_t *ctx);

void conf_cases_addr(const struct conf *c);
void conf_cases_msg(const struct conf *c);
void conf_cases_mem(const struct conf *c);
void conf_cases_rma(const struct conf *c);

#endif /* NA_CONFORMANCE_H */

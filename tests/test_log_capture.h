/*
 * test_log_capture.h -- a log function for HG_Set_log_func() that keeps
 * what is logged in memory, so a test can check a log line's words.
 */
#ifndef TEST_LOG_CAPTURE_H
#define TEST_LOG_CAPTURE_H

#include <stdio.h>

/* The function to pass to HG_Set_log_func(): appends each line (up to 8 KiB
 * in all; the rest is dropped). */
int test_log_capture(FILE *stream, const char *format, ...);
/* What was captured since the last reset, NUL-terminated. */
const char *test_log_captured(void);
/* Forget what was captured. */
void test_log_capture_reset(void);

#endif /* TEST_LOG_CAPTURE_H */

/*
 * test_log_capture.c -- keep log lines in memory (test_log_capture.h).
 */
#include "test_log_capture.h"

#include <stdarg.h>

static char captured[8192];
static size_t captured_len;

int test_log_capture(FILE *stream, const char *format, ...)
{
    va_list ap;
    size_t room = sizeof(captured) - captured_len;

    (void)stream;
    va_start(ap, format);
    int n = vsnprintf(captured + captured_len, room, format, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < room)
        captured_len += (size_t)n;
    else
        captured[captured_len] = '\0'; /* a line that did not fit is dropped whole */
    return n;
}

const char *test_log_captured(void)
{
    return captured;
}

void test_log_capture_reset(void)
{
    captured_len = 0;
    captured[0] = '\0';
}

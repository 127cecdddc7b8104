/*
 * util_harness.c -- a program shaped like Mercury 2.4.1's test harness and
 * perf programs (mercury_test.c, na_test.c, na_perf, hg_perf_server.c) as
 * they use Mercury's utility headers: a file-scope HG_LOG_DECL_REGISTER(my_test)
 * with its MY_LOG_* macros, a subsystem HG_LOG_SUBSYS_DECL_REGISTER(sub,
 * my_test) written with HG_LOG_SUBSYS_WRITE, HG_LOG_WRITE_DEBUG_EXT, a
 * printf-like function passing its va_list to HG_LOG_VWRITE_FUNC /
 * hg_log_vwrite, a module name and an unterminated line through
 * hg_log_write, the level names, a STAILQ of requests through
 * mercury_queue.h, and a thread pinned to one CPU with hg_thread_setaffinity.
 * Built in the tree by make check and against an installed hgx by
 * check-installed.sh (pkg-config mercury_util and CMake's mercury_util
 * target). Exit 0 when every check holds.
 *
 * mercury_thread.h comes first: as Mercury's, it defines _GNU_SOURCE, which
 * the CPU_* macros of <sched.h> need (hg_perf_server.c defines it itself).
 */
#include "mercury_thread.h"

#include "mercury_log.h"
#include "mercury_queue.h"
#include "mercury_util.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "compat_check.h"

/* The harness's outlets: my_test_log_outlet_g below the root outlet, and
 * my_test_sub_log_outlet_g (named "sub") below it. */
extern HG_UTIL_PRIVATE HG_LOG_OUTLET_DECL(my_test);
HG_LOG_DECL_REGISTER(my_test);
HG_LOG_SUBSYS_DECL_REGISTER(sub, my_test);

#define MY_LOG_ERROR(...) HG_LOG_WRITE(my_test, HG_LOG_LEVEL_ERROR, __VA_ARGS__)
#define MY_LOG_WARNING(...) HG_LOG_WRITE(my_test, HG_LOG_LEVEL_WARNING, __VA_ARGS__)
#define MY_LOG_DEBUG(...) HG_LOG_WRITE(my_test, HG_LOG_LEVEL_DEBUG, __VA_ARGS__)
#define MY_LOG_SUBSYS_ERROR(subsys, ...)                                                 \
    HG_LOG_SUBSYS_WRITE(subsys, my_test, HG_LOG_LEVEL_ERROR, __VA_ARGS__)
#define MY_CHECK_ERROR(cond, label, ...)                                                 \
    do {                                                                                 \
        if (cond) {                                                                      \
            MY_LOG_ERROR(__VA_ARGS__);                                                   \
            goto label;                                                                  \
        }                                                                                \
    } while (0)

/* A log callback handing its arguments on as a va_list (as a plugin's
 * library log callback does), with a module name. */
static void my_log_callback(const char *module, const char *file, unsigned int line,
                            const char *func, const char *format, ...)
    HG_UTIL_PRINTF(5, 6);
static void my_log_callback(const char *module, const char *file, unsigned int line,
                            const char *func, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    HG_LOG_VWRITE_FUNC(my_test, HG_LOG_LEVEL_WARNING, module, file, line, func, false,
                       format, ap);
    va_end(ap);
}

/* The same straight to hg_log_vwrite, with no line end. */
static void my_vwrite(const char *format, ...) HG_UTIL_PRINTF(1, 2);
static void my_vwrite(const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    hg_log_vwrite(&HG_LOG_OUTLET(my_test), HG_LOG_LEVEL_WARNING, NULL, __FILE__, __LINE__,
                  __func__, true, format, ap);
    va_end(ap);
}

/* The whole content of f from its start (a static buffer), then the end. */
static const char *slurp(FILE *f)
{
    static char buf[16384];
    size_t n;
    if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0)
        return "";
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fseek(f, 0, SEEK_END);
    return buf;
}

/* Bytes written to f so far. */
static size_t mark(FILE *f)
{
    return strlen(slurp(f));
}

/* Whether text appears in f after byte at. */
static int written_since(FILE *f, size_t at, const char *text)
{
    const char *all = slurp(f);
    return strlen(all) >= at && strstr(all + at, text) != NULL;
}

static int goto_error(int fail)
{
    MY_CHECK_ERROR(fail, error, "check failed (%d)", fail);
    return 0;
error:
    return -1;
}

static void check_outlets(void)
{
    FILE *err = tmpfile(), *out = tmpfile();
    size_t at;
    CHECK(err && out);
    if (!err || !out)
        return;
    hg_log_set_stream_error(err);
    hg_log_set_stream_warning(out);
    hg_log_set_stream_debug(out);

    /* The variables and names the macros define. */
    CHECK(strcmp(HG_LOG_OUTLET(my_test).name, "my_test") == 0);
    CHECK(strcmp(HG_LOG_OUTLET(my_test_sub).name, "sub") == 0);
    CHECK(HG_LOG_OUTLET(my_test).parent == &HG_LOG_OUTLET(HG_LOG_OUTLET_ROOT_NAME));
    CHECK(&HG_LOG_OUTLET(HG_LOG_OUTLET_ROOT_NAME) == &hg_all_log_outlet_g);
    CHECK(strcmp(hg_all_log_outlet_g.name, "hg_all") == 0);
    CHECK(HG_LOG_OUTLET(my_test_sub).parent == &my_test_log_outlet_g);
    CHECK(my_test_log_outlet_g.registered && my_test_sub_log_outlet_g.registered);
    CHECK(hg_all_log_outlet_g.registered);

    /* The harness's setup when HG_LOG_SUBSYS is unset. */
    HG_Util_set_log_level("warning");
    hg_log_set_subsys("hg,my_test");
    CHECK(HG_LOG_OUTLET(my_test).level == HG_LOG_LEVEL_WARNING);
    CHECK(HG_LOG_OUTLET(my_test_sub).level == HG_LOG_LEVEL_WARNING);

    at = mark(err);
    MY_LOG_ERROR("harness error %d", 1);
    CHECK(written_since(err, at, "[my_test] error"));
    CHECK(written_since(err, at, "harness error 1\n"));
    CHECK(goto_error(5) == -1 && written_since(err, at, "check failed (5)"));
    at = mark(err);
    MY_LOG_SUBSYS_ERROR(sub, "subsystem error %d", 2);
    CHECK(written_since(err, at, "[sub] error") && written_since(err, at, "error 2"));
    at = mark(out);
    MY_LOG_WARNING("a warning");
    MY_LOG_DEBUG("debug hidden at warning");
    CHECK(written_since(out, at, "[my_test] warning") &&
          !written_since(out, at, "debug hidden"));

    /* Silenced by name: the subsystem alone, then its parent and so the
     * subsystem; a list naming neither silences both. */
    hg_log_set_subsys("hg,my_test,~sub");
    CHECK(HG_LOG_OUTLET(my_test).level == HG_LOG_LEVEL_WARNING);
    CHECK(HG_LOG_OUTLET(my_test_sub).level == HG_LOG_LEVEL_NONE);
    at = mark(err);
    MY_LOG_SUBSYS_ERROR(sub, "silenced subsystem");
    MY_LOG_ERROR("parent still logs");
    CHECK(!written_since(err, at, "silenced subsystem"));
    CHECK(written_since(err, at, "parent still logs"));
    hg_log_set_subsys("~my_test");
    CHECK(HG_LOG_OUTLET(my_test_sub).level == HG_LOG_LEVEL_NONE);
    hg_log_set_subsys("hg,na");
    at = mark(err);
    MY_LOG_ERROR("not listed");
    MY_LOG_SUBSYS_ERROR(sub, "not listed either");
    CHECK(mark(err) == at);
    hg_log_set_subsys("sub"); /* the subsystem alone */
    CHECK(HG_LOG_OUTLET(my_test).level == HG_LOG_LEVEL_NONE);
    CHECK(HG_LOG_OUTLET(my_test_sub).level == HG_LOG_LEVEL_WARNING);
    hg_log_set_subsys("hg_all"); /* the root: every outlet */
    CHECK(HG_LOG_OUTLET(my_test).level == HG_LOG_LEVEL_WARNING);
    CHECK(HG_LOG_OUTLET(my_test_sub).level == HG_LOG_LEVEL_WARNING);

    /* A module before the file, and a line left open. */
    at = mark(out);
    my_log_callback("mod", "lib/x.c", 12, "cb", "from a callback (%s)", "va");
    CHECK(written_since(out, at,
                        "[my_test] warning mod:x.c:12 cb(): from a callback (va)\n"));
    at = mark(out);
    my_vwrite("open %d", 3);
    hg_log_write(&HG_LOG_OUTLET(my_test), HG_LOG_LEVEL_WARNING, NULL, "y.c", 7, "f",
                 false, "closed");
    CHECK(written_since(out, at, "open 3[my_test] warning y.c:7 f(): closed\n"));

    /* HG_LOG_WRITE_DEBUG_EXT prints only at debug: header line, text, "---". */
    at = mark(out);
    HG_LOG_WRITE_DEBUG_EXT(my_test, "ext header", "ext body %d\n", 4);
    CHECK(mark(out) == at);
    hg_log_set_level(HG_LOG_LEVEL_DEBUG);
    HG_LOG_WRITE_DEBUG_EXT(my_test, "ext header", "ext body %d\n", 4);
    HG_LOG_SUBSYS_WRITE_DEBUG_EXT(sub, my_test, "sub header", "sub body\n");
    CHECK(written_since(out, at, "[my_test] debug ") &&
          written_since(out, at, "(): ext header\next body 4\n---\n"));
    CHECK(written_since(out, at, "[sub] debug ") &&
          written_since(out, at, "(): sub header\nsub body\n---\n"));
    at = mark(out);
    MY_LOG_DEBUG("debug shown");
    CHECK(written_since(out, at, "[my_test] debug") &&
          written_since(out, at, "debug shown"));

    /* Level names, with Mercury's short names, in any case. */
    CHECK(hg_log_name_to_level("ERROR") == HG_LOG_LEVEL_ERROR);
    CHECK(hg_log_name_to_level("warn") == HG_LOG_LEVEL_WARNING);
    CHECK(hg_log_name_to_level("trace") == HG_LOG_LEVEL_MIN_DEBUG);
    CHECK(hg_log_name_to_level("dbg") == HG_LOG_LEVEL_DEBUG);
    CHECK(hg_log_name_to_level("none") == HG_LOG_LEVEL_NONE);
    CHECK(hg_log_name_to_level("bogus") == HG_LOG_LEVEL_NONE);
    CHECK(strcmp(hg_log_level_to_string(HG_LOG_LEVEL_MIN_DEBUG), "min_debug") == 0);
    CHECK(strcmp(hg_log_level_to_string(HG_LOG_LEVEL_NONE), "") == 0);
#define X(level, name, short_name, stream) +1
    CHECK(0 HG_LOG_LEVELS == HG_LOG_LEVEL_MAX + 1);
#undef X

    HG_Util_set_log_level("error");
    hg_log_set_subsys("");
    hg_log_set_stream_error(NULL);
    hg_log_set_stream_warning(NULL);
    hg_log_set_stream_debug(NULL);
    fclose(err);
    fclose(out);
}

/* Requests kept as na_perf keeps them: a STAILQ of structs. */
struct my_request {
    int id;
    STAILQ_ENTRY(my_request) entry;
};
struct my_request_list {
    STAILQ_HEAD(, my_request) queue;
    int count;
};

static void check_queue(void)
{
    struct my_request reqs[4];
    struct my_request_list list;
    struct my_request *r;
    int order = 0;
    STAILQ_INIT(&list.queue);
    list.count = 0;
    CHECK(STAILQ_EMPTY(&list.queue));
    for (int i = 0; i < 4; i++) {
        reqs[i].id = i + 1;
        if (i == 0)
            STAILQ_INSERT_HEAD(&list.queue, &reqs[i], entry);
        else
            STAILQ_INSERT_TAIL(&list.queue, &reqs[i], entry);
        list.count++;
    }
    STAILQ_FOREACH(r, &list.queue, entry)
    order = order * 10 + r->id;
    CHECK(order == 1234 && list.count == 4);
    /* Take requests from the head until empty. */
    order = 0;
    while (!STAILQ_EMPTY(&list.queue)) {
        r = STAILQ_FIRST(&list.queue);
        STAILQ_REMOVE_HEAD(&list.queue, entry);
        list.count--;
        order = order * 10 + r->id;
    }
    CHECK(order == 1234 && list.count == 0 && STAILQ_FIRST(&list.queue) == NULL);
}

/* A progress thread pinned to one CPU, as hg_perf_server.c pins its class
 * threads: CPU 0 when the process may use it, else the first it may. */
struct pin_result {
    int cpu, set_rc, get_rc, isset, count;
};

static HG_THREAD_RETURN_TYPE pin_thread(void *arg)
{
    struct pin_result *res = (struct pin_result *)arg;
    hg_cpu_set_t orig, one;
    CPU_ZERO(&orig);
    res->get_rc = hg_thread_getaffinity(hg_thread_self(), &orig);
    res->cpu = 0;
    while (res->cpu < CPU_SETSIZE && !CPU_ISSET(res->cpu, &orig))
        res->cpu++;
    CPU_ZERO(&one);
    CPU_SET(res->cpu, &one);
    res->set_rc = hg_thread_setaffinity(hg_thread_self(), &one);
    CPU_ZERO(&orig);
    if (hg_thread_getaffinity(hg_thread_self(), &orig) != HG_UTIL_SUCCESS)
        res->get_rc = HG_UTIL_FAIL;
    res->isset = CPU_ISSET(res->cpu, &orig);
    res->count = CPU_COUNT(&orig);
    return (hg_thread_ret_t)0;
}

static void check_affinity(void)
{
    struct pin_result res = {-1, -1, -1, 0, 0};
    hg_thread_t t;
    hg_cpu_set_t mine, none;
    CHECK(hg_thread_create(&t, pin_thread, &res) == HG_UTIL_SUCCESS &&
          hg_thread_join(t) == HG_UTIL_SUCCESS);
    CHECK(res.get_rc == HG_UTIL_SUCCESS && res.set_rc == HG_UTIL_SUCCESS);
    CHECK(res.cpu >= 0 && res.cpu < CPU_SETSIZE && res.isset && res.count == 1);
    /* The calling thread keeps its set; an empty set is refused. */
    CPU_ZERO(&mine);
    CHECK(hg_thread_getaffinity(hg_thread_self(), &mine) == HG_UTIL_SUCCESS);
    CHECK(CPU_ISSET(res.cpu, &mine));
    CPU_ZERO(&none);
    CHECK(hg_thread_setaffinity(hg_thread_self(), &none) == HG_UTIL_FAIL);
}

int main(void)
{
    check_outlets();
    check_queue();
    check_affinity();
    if (failures)
        printf("util_harness: %d check(s) FAILED\n", failures);
    else
        printf("util_harness: PASS\n");
    return failures ? 1 : 0;
}

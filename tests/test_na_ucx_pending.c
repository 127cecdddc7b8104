/*
 * test_na_ucx_pending.c -- flood a slow UCX server with max-size unexpected
 * messages posted back to back. The plugin's send window
 * (HGX_UCX_SEND_WINDOW) fills, so sends wait in its resource queue (seed
 * 003): every one must arrive, in order, with its data, and the queue must be
 * drained at the end. A variant cancels queued sends mid-flood: they end
 * NA_CANCELED and never arrive, the others still arrive in order. Another
 * cancels a whole first batch while the server stalls: at most a window of
 * sends is in flight, those end when the cancel escalation drops the
 * endpoint, and a second batch over the new endpoint has a full window again.
 * And one where the server progresses without a receive posted while the flood
 * arrives, its backlog bound set to 16 (HGX_NA_UNEXPECTED_MAX): the plugin
 * keeps about 16 messages and leaves the rest with UCX (the sender's sends
 * queue), then hands every one over, in order and once each, as the server
 * posts receives.
 */
#include "hgx_test_hooks.h"
#include "na_test_proto.h"

#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define TEST_STR_(x) #x
#define TEST_STR(x) TEST_STR_(x)
#define FLOOD_COUNT 10000
#define FLOOD_TAG 5
#define FLOOD_END UINT32_MAX /* seq of the last message: the list of seqs sent */
#define FLOOD_MAP_BYTES ((FLOOD_COUNT + 7) / 8)
#define FLOOD_CANCEL_EVERY 7
#define FLOOD_STALL_US 200000 /* server stall after a batch's first message */
#define FLOOD_SPLIT 6000      /* escalate: first seq of the second batch */
#define FLOOD_ESCALATE_MS "300"
#define FLOOD_LONG_STALL_US 2000000 /* escalate: longer than the escalation */
#define FLOOD_SETTLE_S 0.5          /* escalate: the server is asleep by then */
#define FLOOD_HOLD_S 1.0            /* held: progress with no receive posted */
#define FLOOD_UNEXP_MAX 16          /* held: HGX_NA_UNEXPECTED_MAX */
/* held: messages one progress pass may take past the bound (UCX hands a
 * pass's arrivals to the plugin before it can stop) */
#define FLOOD_UNEXP_SLACK 64

/* The server finalizes once the client has (end of file on [0]): whichever
 * side progresses after the other closed logs a connection error. */
static int flood_release[2];

enum flood_mode {
    FLOOD_PLAIN,
    FLOOD_CANCEL,   /* cancel every 7th send posted while the queue is non-empty */
    FLOOD_ESCALATE, /* cancel the first batch, then send a second one */
    FLOOD_HELD,     /* the server progresses with no receive posted at first */
};

struct flood_params {
    const char *info;
    const char *window; /* HGX_UCX_SEND_WINDOW, NULL for the default */
    enum flood_mode mode;
};

/* The running test's parameters, for the forked server too. */
static const struct flood_params *flood_cur;

/* One flood send's outcome; all->count counts every completion. */
struct flood_slot {
    struct na_test_done *all;
    int count;
    na_return_t ret;
};

static void flood_cb(const struct na_cb_info *info)
{
    struct flood_slot *s = info->arg;
    s->count++;
    s->ret = info->ret;
    s->all->count++;
}

static void map_set(uint8_t *map, uint32_t i)
{
    map[i / 8] |= (uint8_t)(1u << (i % 8));
}

static bool map_get(const uint8_t *map, uint32_t i)
{
    return map[i / 8] >> (i % 8) & 1;
}

/* First seq of the second batch (FLOOD_COUNT: one batch). */
static uint32_t flood_split(void)
{
    return flood_cur->mode == FLOOD_ESCALATE ? FLOOD_SPLIT : FLOOD_COUNT;
}

/* Check one flood message: strictly after the previous one of its batch,
 * intact. */
static bool flood_check(const char *msg, size_t size, size_t full, na_tag_t tag,
                        uint32_t seq, int64_t last)
{
    if ((int64_t)seq <= last || seq >= FLOOD_COUNT || size != full || tag != FLOOD_TAG ||
        !test_check(msg + sizeof(seq), size - sizeof(seq), seq)) {
        fprintf(stderr, "# after seq %lld: got seq %u, %zu bytes, tag %u\n",
                (long long)last, seq, size, (unsigned)tag);
        return false;
    }
    return true;
}

/* The end message lists the sends that succeeded: exactly those arrived.
 * Escalate: the first batch's endpoint was dropped, so a send that succeeded
 * (left the client) may still have been lost; a cancelled one never arrives. */
static bool flood_end_check(const uint8_t *listed, const uint8_t *got)
{
    for (uint32_t i = 0; i < FLOOD_COUNT; i++)
        if (map_get(got, i) != map_get(listed, i) &&
            (i >= flood_split() || map_get(got, i))) {
            fprintf(stderr, "# seq %u: %s\n", i,
                    map_get(got, i) ? "arrived, not sent" : "sent, lost");
            return false;
        }
    return true;
}

/* Receive until the end message; 1 if each batch came in increasing order,
 * intact, and as the end message lists. *src_p: the client. */
static uint8_t flood_receive(na_class_t *cls, na_context_t *ctx, na_op_id_t *op,
                             na_addr_t **src_p)
{
    size_t size = NA_Msg_get_max_unexpected_size(cls),
           h = NA_Msg_get_unexpected_header_size(cls);
    char *buf = malloc(size);
    uint8_t got[FLOOD_MAP_BYTES] = {0}, ok = buf != NULL;
    int64_t last[2] = {-1, (int64_t)flood_split() - 1};
    uint32_t n[2] = {0, 0};
    if (flood_cur->mode == FLOOD_HELD) {
        /* Every message the worker takes now finds no receive: kept, up to
         * the bound; then the rest stays with UCX. */
        for (double end = test_now() + FLOOD_HOLD_S; test_now() < end;)
            NA_Progress(cls, ctx, 10);
        long peak = 0, now = na_ucx_held_count(&peak);
        fprintf(stderr,
                "# held: %ld messages kept (at most %ld) before the first receive\n", now,
                peak);
        ok = peak >= FLOOD_UNEXP_MAX && peak <= FLOOD_UNEXP_MAX + FLOOD_UNEXP_SLACK;
    }
    while (ok) {
        struct na_test_done done = {0};
        uint32_t seq = 0;
        if (NA_Msg_recv_unexpected(cls, ctx, na_test_cb, &done, buf, size, NULL, op) !=
                NA_SUCCESS ||
            !na_test_wait(cls, ctx, &done, 1, 30000) || done.ret != NA_SUCCESS ||
            done.size < h + sizeof(seq)) {
            ok = 0;
            break;
        }
        if (*src_p)
            NA_Addr_free(cls, done.source);
        else
            *src_p = done.source;
        memcpy(&seq, buf + h, sizeof(seq));
        if (seq == FLOOD_END) {
            ok = done.size == h + 4 + FLOOD_MAP_BYTES &&
                 flood_end_check((const uint8_t *)buf + h + 4, got);
            break;
        }
        int b = seq >= flood_split();
        ok = flood_check(buf + h, done.size - h, size - h, done.tag, seq, last[b]);
        if (ok) {
            map_set(got, seq);
            last[b] = seq;
        }
        /* Stall: let the sender fill its window (escalate: past the cancel
         * escalation delay); then a slow receiver lets it run ahead. */
        if (n[b]++ == 0)
            usleep(flood_cur->mode == FLOOD_ESCALATE && b == 0 ? FLOOD_LONG_STALL_US
                                                               : FLOOD_STALL_US);
        else if (n[b] % 500 == 0)
            usleep(10000);
    }
    free(buf);
    return ok;
}

/* Server: check the flood, answer 1 (as expected) or 0 with an expected message. */
static int flood_server(const char *info, int publish_fd)
{
    na_class_t *cls = NA_Initialize(info, true);
    na_context_t *ctx = cls ? NA_Context_create(cls) : NULL;
    na_addr_t *self = NULL, *src = NULL;
    char addr[TEST_ADDR_MAX];
    size_t addr_len = sizeof(addr);
    if (!ctx || NA_Addr_self(cls, &self) != NA_SUCCESS ||
        NA_Addr_to_string(cls, addr, &addr_len, self) != NA_SUCCESS) {
        test_server_publish(publish_fd, "");
        return 1;
    }
    NA_Addr_free(cls, self);
    test_server_publish(publish_fd, addr);

    close(flood_release[1]);
    if (flood_cur->mode == FLOOD_ESCALATE)
        NA_Set_log_level("none"); /* the client drops its endpoint on purpose */
    na_op_id_t *op = NA_Op_create(cls, NA_OP_SINGLE);
    uint8_t ok = flood_receive(cls, ctx, op, &src);
    if (na_ucx_held_count(NULL) != 0) {
        fprintf(stderr, "# %ld unexpected messages still kept\n",
                na_ucx_held_count(NULL));
        ok = 0;
    }
    int rc = 1;
    if (src) {
        struct na_test_done done = {0};
        size_t eh = NA_Msg_get_expected_header_size(cls);
        char reply[64] = {0};
        reply[eh] = (char)ok;
        if (NA_Msg_send_expected(cls, ctx, na_test_cb, &done, reply, eh + 1, NULL, src, 0,
                                 1, op) == NA_SUCCESS &&
            na_test_wait(cls, ctx, &done, 1, 10000) && done.ret == NA_SUCCESS)
            rc = ok ? 0 : 1;
        NA_Addr_free(cls, src);
    }
    struct pollfd pfd = {.fd = flood_release[0], .events = POLLIN};
    poll(&pfd, 1, 10000);
    NA_Op_destroy(cls, op);
    NA_Context_destroy(cls, ctx);
    NA_Finalize(cls);
    return rc;
}

struct flood_client {
    na_class_t *cls;
    na_context_t *ctx;
    na_addr_t *server;
    size_t size, h;
    char *bufs;
    na_op_id_t **ops;
    struct flood_slot *slots;
    struct na_test_done all;
    bool *cancelled;    /* cancelled before it was sent: must end NA_CANCELED */
    long max_queued[2]; /* per batch */
    uint32_t ncancel, inflight;
};

/* Post sends [from, to) back to back; FLOOD_CANCEL: cancel every 7th one
 * posted while the queue is non-empty. */
static void flood_post(struct flood_client *c, uint32_t from, uint32_t to, bool cancel)
{
    int batch = from > 0;
    for (uint32_t i = from; i < to; i++) {
        assert_int_equal(NA_Msg_send_unexpected(c->cls, c->ctx, flood_cb, &c->slots[i],
                                                c->bufs + (size_t)i * c->size, c->size,
                                                NULL, c->server, 0, FLOOD_TAG, c->ops[i]),
                         NA_SUCCESS);
        if (i == 0) {
            /* The first send opens the connection (a lookup does not): the
             * flood starts once it went, so that it fills the send window,
             * not the queue of a connection being wired up. */
            assert_true(na_test_wait(c->cls, c->ctx, &c->all, 1, 10000));
            continue;
        }
        long queued = na_ucx_pending_count();
        if (queued > c->max_queued[batch])
            c->max_queued[batch] = queued;
        /* Queue non-empty and no progress since the post: this send is queued. */
        if (cancel && queued > 0 && i % FLOOD_CANCEL_EVERY == 0) {
            assert_int_equal(NA_Cancel(c->cls, c->ctx, c->ops[i]), NA_SUCCESS);
            c->cancelled[i] = true;
        }
    }
}

/* Escalate: cancel the whole first batch [0, to) while the server stalls,
 * once it has taken what it will before its stall (a stalled server frees no
 * room: a send in flight now stays so). Without progress, the sends not complete yet are
 * those holding a UCX request: at least one (the server is not reading) and at most a
 * window of them; the others were sent at once or queued (cancelled now). The cancel
 * escalation drops the endpoint under those in flight: NA_CANCELED. */
static void flood_cancel_batch(struct flood_client *c, uint32_t to, uint32_t window)
{
    unsigned int count = 0;
    double settled = test_now() + FLOOD_SETTLE_S;
    while (test_now() < settled)
        NA_Progress(c->cls, c->ctx, 10);
    for (uint32_t i = 0; i < to; i++)
        assert_int_equal(NA_Cancel(c->cls, c->ctx, c->ops[i]), NA_SUCCESS);
    NA_Trigger(c->ctx, to, &count);
    bool *flying = calloc(to, sizeof(*flying));
    assert_non_null(flying);
    for (uint32_t i = 0; i < to; i++) {
        flying[i] = c->slots[i].count == 0;
        c->inflight += flying[i];
    }
    assert_true(c->inflight >= 1 && c->inflight <= window);
    assert_true(na_test_wait(c->cls, c->ctx, &c->all, (int)to, 30000));
    /* A send in flight that the server's last reads let through before its
     * stall ends NA_SUCCESS (the data moved); the escalation ends the rest. */
    uint32_t escalated = 0;
    for (uint32_t i = 0; i < to; i++) {
        c->cancelled[i] = c->slots[i].ret == NA_CANCELED;
        escalated += flying[i] && c->cancelled[i];
    }
    free(flying);
    assert_true(escalated >= 1);
}

/* Every send ended once, cancelled ones NA_CANCELED; the end message lists
 * the others for the server to check what arrived. */
static void flood_finish(struct flood_client *c)
{
    uint8_t map[FLOOD_MAP_BYTES] = {0};
    for (uint32_t i = 0; i < FLOOD_COUNT; i++) {
        assert_int_equal(c->slots[i].count, 1);
        assert_int_equal(c->slots[i].ret, c->cancelled[i] ? NA_CANCELED : NA_SUCCESS);
        if (c->cancelled[i])
            c->ncancel++;
        else
            map_set(map, i);
    }
    char *b = c->bufs;
    uint32_t end = FLOOD_END;
    NA_Msg_init_unexpected(c->cls, b, c->size);
    memcpy(b + c->h, &end, 4);
    memcpy(b + c->h + 4, map, FLOOD_MAP_BYTES);
    struct na_test_done sent = {0};
    assert_int_equal(NA_Msg_send_unexpected(c->cls, c->ctx, na_test_cb, &sent, b,
                                            c->h + 4 + FLOOD_MAP_BYTES, NULL, c->server,
                                            0, FLOOD_TAG, c->ops[0]),
                     NA_SUCCESS);
    assert_true(na_test_wait(c->cls, c->ctx, &sent, 1, 10000));
    assert_int_equal(sent.ret, NA_SUCCESS);
}

/* Set (value) or unset (NULL) an environment variable. */
static void flood_env(const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

/* Escalate: transport buffers that hold fewer messages than a peer's
 * credits allow (UCX_CREDITS, 64 of 8 KiB), so that sends stay in flight
 * while the server stalls; or NULL for UCX's defaults. */
static void flood_env_buffers(bool small)
{
    bool shm = strncmp(flood_cur->info, "ucx+shm", 7) == 0;
    flood_env("UCX_TCP_SNDBUF", small ? "64k" : NULL);
    flood_env("UCX_TCP_RCVBUF", small ? "64k" : NULL);
    flood_env("UCX_MM_FIFO_SIZE", small && shm ? "16" : NULL);
}

/* Client and forked server, with the plugin settings of the test (both
 * read at class init). */
static void flood_start(struct flood_client *c, struct test_server *srv)
{
    flood_env_buffers(flood_cur->mode == FLOOD_ESCALATE);
    flood_env("HGX_UCX_SEND_WINDOW", flood_cur->window);
    flood_env("HGX_UCX_CANCEL_ESCALATE_MS",
              flood_cur->mode == FLOOD_ESCALATE ? FLOOD_ESCALATE_MS : NULL);
    flood_env("HGX_NA_UNEXPECTED_MAX",
              flood_cur->mode == FLOOD_HELD ? TEST_STR(FLOOD_UNEXP_MAX) : NULL);
    assert_int_equal(pipe(flood_release), 0);
    assert_true(test_server_start(srv, flood_cur->info, flood_server));
    close(flood_release[0]);
    c->cls = NA_Initialize(flood_cur->info, false);
    flood_env("HGX_UCX_SEND_WINDOW", NULL);
    flood_env("HGX_UCX_CANCEL_ESCALATE_MS", NULL);
    flood_env("HGX_NA_UNEXPECTED_MAX", NULL);
    flood_env_buffers(false);
    assert_non_null(c->cls);
    c->ctx = NA_Context_create(c->cls);
    assert_int_equal(NA_Addr_lookup(c->cls, srv->addr, &c->server), NA_SUCCESS);
    c->size = NA_Msg_get_max_unexpected_size(c->cls);
    c->h = NA_Msg_get_unexpected_header_size(c->cls);
    c->bufs = malloc((size_t)FLOOD_COUNT * c->size);
    c->ops = calloc(FLOOD_COUNT, sizeof(*c->ops));
    c->slots = calloc(FLOOD_COUNT, sizeof(*c->slots));
    c->cancelled = calloc(FLOOD_COUNT, sizeof(*c->cancelled));
    assert_true(c->bufs && c->ops && c->slots && c->cancelled);
    /* Filled beforehand: posting runs back to back. */
    for (uint32_t i = 0; i < FLOOD_COUNT; i++) {
        char *b = c->bufs + (size_t)i * c->size;
        c->ops[i] = NA_Op_create(c->cls, NA_OP_SINGLE);
        c->slots[i].all = &c->all;
        NA_Msg_init_unexpected(c->cls, b, c->size);
        memcpy(b + c->h, &i, sizeof(i));
        test_fill(b + c->h + sizeof(i), c->size - c->h - sizeof(i), i);
    }
}

/* Client first: the server finalizes once released (see flood_release). */
static void flood_stop(struct flood_client *c, struct test_server *srv)
{
    for (uint32_t i = 0; i < FLOOD_COUNT; i++)
        NA_Op_destroy(c->cls, c->ops[i]);
    free(c->cancelled);
    free(c->slots);
    free(c->ops);
    free(c->bufs);
    NA_Addr_free(c->cls, c->server);
    assert_int_equal(NA_Context_destroy(c->cls, c->ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(c->cls), NA_SUCCESS);
    close(flood_release[1]);
    assert_int_equal(test_server_wait(srv, 10000), 0);
}

static void test_flood(void **state)
{
    flood_cur = *state;
    bool escalate = flood_cur->mode == FLOOD_ESCALATE;
    uint32_t split = flood_split();
    struct flood_client c = {0};
    struct test_server srv;
    flood_start(&c, &srv);

    size_t eh = NA_Msg_get_expected_header_size(c.cls);
    struct na_test_done got = {0};
    char reply[64] = {0};
    na_op_id_t *rop = NA_Op_create(c.cls, NA_OP_SINGLE);
    assert_int_equal(NA_Msg_recv_expected(c.cls, c.ctx, na_test_cb, &got, reply,
                                          sizeof(reply), NULL, c.server, 0, 1, rop),
                     NA_SUCCESS);
    flood_post(&c, 0, split, flood_cur->mode == FLOOD_CANCEL);
    if (escalate) {
        flood_cancel_batch(&c, split, (uint32_t)atoi(flood_cur->window));
        assert_int_equal(na_ucx_pending_count(), 0);
        flood_post(&c, split, FLOOD_COUNT, false); /* over a new endpoint */
    }
    assert_true(na_test_wait(c.cls, c.ctx, &c.all, FLOOD_COUNT, 60000));
    assert_int_equal(na_ucx_pending_count(), 0);
    flood_finish(&c);
    assert_true(na_test_wait(c.cls, c.ctx, &got, 1, 60000));
    assert_int_equal(got.ret, NA_SUCCESS);
    assert_int_equal(reply[eh], 1);
    print_message("# %s, window %s: %u of %d sent in order, %u cancelled (%u in flight); "
                  "at most %ld, %ld queued for resources\n",
                  flood_cur->info, flood_cur->window ? flood_cur->window : "default",
                  FLOOD_COUNT - c.ncancel, FLOOD_COUNT, c.ncancel, c.inflight,
                  c.max_queued[0], c.max_queued[1]);
    /* The server stalls with the window full (held: it leaves messages with
     * UCX past its bound): the queue must have been used. */
    assert_true(c.max_queued[0] > 0);
    if (escalate)
        assert_true(c.max_queued[1] > 0); /* the new endpoint has a window too */
    if (flood_cur->mode == FLOOD_CANCEL || escalate)
        assert_true(c.ncancel > 0);
    NA_Op_destroy(c.cls, rop);
    flood_stop(&c, &srv);
}

int main(void)
{
    static const struct flood_params p[] = {
        {"ucx+tcp://127.0.0.1", "8", FLOOD_PLAIN},
        {"ucx+tcp://127.0.0.1", NULL, FLOOD_PLAIN},
        {"ucx+tcp://127.0.0.1", "8", FLOOD_CANCEL},
        {"ucx+tcp://127.0.0.1", "8", FLOOD_ESCALATE},
        {"ucx+shm", "8", FLOOD_PLAIN},
        {"ucx+shm", NULL, FLOOD_PLAIN},
        {"ucx+shm", "8", FLOOD_CANCEL},
        {"ucx+shm", "8", FLOOD_ESCALATE},
        {"ucx+tcp://127.0.0.1", NULL, FLOOD_HELD},
        {"ucx+shm", NULL, FLOOD_HELD},
    };
    static const char *names[] = {"window8", "default", "cancel", "escalate", "held"};
    struct CMUnitTest tests[sizeof(p) / sizeof(*p)];
    char name[sizeof(p) / sizeof(*p)][64];
    for (size_t i = 0; i < sizeof(p) / sizeof(*p); i++) {
        snprintf(name[i], sizeof(name[i]), "flood/%s/%s", p[i].info,
                 names[p[i].mode == FLOOD_HELD ? 4 : i % 4]);
        tests[i] = (struct CMUnitTest){name[i], test_flood, NULL, NULL, (void *)&p[i]};
    }
    return _cmocka_run_group_tests("na_ucx_pending", tests,
                                   sizeof(tests) / sizeof(*tests), NULL, NULL)
               ? 1
               : 0;
}

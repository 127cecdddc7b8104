/*
 * bulk_forge.c -- the server and the attacks of bulk_forge.h.
 */
#include "bulk_forge.h"

#include "mercury_macros.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FORGE_RPC_MS 5000
#define FORGE_SECRET_SEED 0x5ec
#define FORGE_FOREIGN_SEED 0xf0
#define FORGE_OPTIONS_AT 6     /* descriptor byte of the options */
#define FORGE_OPTION_EAGER 0x2 /* the data follows the descriptor */

/* Offset of each region in the server buffer; the freed one's bytes are
 * secret again once its handle is gone. */
static const size_t region_off[FORGE_NDESC] = {8192, 24576, 40960, 8192, 57344};
static const uint8_t region_flags[FORGE_NDESC] = {HG_BULK_READ_ONLY, HG_BULK_WRITE_ONLY,
                                                  HG_BULK_READWRITE, HG_BULK_READ_ONLY,
                                                  HG_BULK_READWRITE};
/* FORGE_SEGS: the read-only region in three segments. */
static const hg_size_t segs_size[] = {1000, 2000, FORGE_REGION - 3000};
#define FORGE_NSEGS (sizeof(segs_size) / sizeof(*segs_size))

typedef struct {
    uint32_t len[FORGE_NDESC];
    unsigned char bytes[FORGE_NDESC][FORGE_DESC_MAX];
} forge_descs_t;

MERCURY_GEN_PROC(forge_audit_t, ((uint64_t)(bad)))

static hg_return_t hg_proc_forge_descs_t(hg_proc_t proc, void *data)
{
    forge_descs_t *d = data;

    for (int i = 0; i < FORGE_NDESC; i++) {
        hg_return_t ret = hg_proc_uint32_t(proc, &d->len[i]);
        if (ret != HG_SUCCESS)
            return ret;
        if (d->len[i] > FORGE_DESC_MAX)
            return HG_OVERFLOW;
        if (hg_proc_get_op(proc) != HG_FREE &&
            (ret = hg_proc_raw(proc, d->bytes[i], d->len[i])) != HG_SUCCESS)
            return ret;
    }
    return HG_SUCCESS;
}

static bool readable(enum forge_desc d)
{
    return d == FORGE_RO || d == FORGE_RW || d == FORGE_SEGS;
}

static bool writable(enum forge_desc d)
{
    return d == FORGE_WO || d == FORGE_RW;
}

/* The pattern seed of a region's contents. */
static unsigned int contents(enum forge_desc d)
{
    return d == FORGE_SEGS ? FORGE_RO : (unsigned int)d;
}

/* Byte i of pattern seed: the secret, and each region's own contents; the
 * high bit is clear only in the readable regions' bytes. */
static unsigned char pattern(unsigned int seed, size_t i)
{
    uint32_t x = (uint32_t)(seed * 2654435761u + i * 40503u);
    unsigned char b = (unsigned char)((x >> 13) ^ (x >> 5) ^ i);
    return readable((enum forge_desc)seed) ? b & 0x7f : b | 0x80;
}

bool forge_readable_byte(unsigned char b)
{
    return b < 0x80;
}

static void pattern_fill(unsigned char *p, size_t len, unsigned int seed, size_t from)
{
    for (size_t i = 0; i < len; i++)
        p[i] = pattern(seed, from + i);
}

/* ------------------------------------------------------------------------- */
/* Server                                                                    */
/* ------------------------------------------------------------------------- */

struct forge_server {
    hg_class_t *cls;
    unsigned char *mem, *image;
    hg_bulk_t bulk[FORGE_NDESC - 1];
    forge_descs_t descs;
    bool stopped;
};

static struct forge_server *server_of(hg_handle_t h)
{
    const struct hg_info *info = HG_Get_info(h);
    return HG_Registered_data(info->hg_class, info->id);
}

static hg_return_t descs_cb(hg_handle_t h)
{
    HG_Respond(h, NULL, NULL, &server_of(h)->descs);
    return HG_Destroy(h);
}

static hg_return_t audit_cb(hg_handle_t h)
{
    forge_audit_t out = {.bad = forge_server_audit(server_of(h))};
    HG_Respond(h, NULL, NULL, &out);
    return HG_Destroy(h);
}

static hg_return_t stop_cb(hg_handle_t h)
{
    server_of(h)->stopped = true;
    HG_Respond(h, NULL, NULL, NULL);
    return HG_Destroy(h);
}

static hg_return_t expose(struct forge_server *srv, enum forge_desc d, hg_bulk_t *bulk)
{
    uint32_t n = d == FORGE_SEGS ? FORGE_NSEGS : 1;
    void *ptrs[FORGE_NSEGS];
    hg_size_t sizes[FORGE_NSEGS];
    unsigned char *p = srv->mem + region_off[d];

    for (uint32_t i = 0; i < n; p += sizes[i++]) {
        ptrs[i] = p;
        sizes[i] = n == 1 ? FORGE_REGION : segs_size[i];
    }
    hg_return_t ret = HG_Bulk_create(srv->cls, n, ptrs, sizes, region_flags[d], bulk);

    if (ret == HG_SUCCESS) {
        srv->descs.len[d] = (uint32_t)HG_Bulk_get_serialize_size(*bulk, 0);
        if (srv->descs.len[d] > FORGE_DESC_MAX)
            return HG_OVERFLOW;
        ret = HG_Bulk_serialize(srv->descs.bytes[d], FORGE_DESC_MAX, 0, *bulk);
    }
    return ret;
}

static void register_rpcs(hg_class_t *cls, hg_id_t *descs, hg_id_t *audit, hg_id_t *stop,
                          bool server)
{
    *descs = MERCURY_REGISTER(cls, "forge_descs", void, forge_descs_t,
                              server ? descs_cb : NULL);
    *audit = MERCURY_REGISTER(cls, "forge_audit", void, forge_audit_t,
                              server ? audit_cb : NULL);
    *stop = MERCURY_REGISTER(cls, "forge_stop", void, void, server ? stop_cb : NULL);
}

struct forge_server *forge_server_create(hg_class_t *cls)
{
    struct forge_server *srv = calloc(1, sizeof(*srv));
    hg_id_t ids[3];

    if (!srv)
        return NULL;
    srv->cls = cls;
    srv->mem = malloc(FORGE_BUF_SIZE);
    srv->image = malloc(FORGE_BUF_SIZE);
    if (!srv->mem || !srv->image)
        goto error;
    pattern_fill(srv->mem, FORGE_BUF_SIZE, FORGE_SECRET_SEED, 0);
    for (int d = FORGE_RO; d <= FORGE_RW; d++)
        pattern_fill(srv->mem + region_off[d], FORGE_REGION, contents((enum forge_desc)d),
                     0);
    hg_bulk_t freed;
    for (int d = 0; d < FORGE_NDESC - 1; d++)
        if (expose(srv, (enum forge_desc)d, &srv->bulk[d]) != HG_SUCCESS)
            goto error;
    if (expose(srv, FORGE_FREED, &freed) != HG_SUCCESS)
        goto error;
    HG_Bulk_free(freed);
    memcpy(srv->image, srv->mem, FORGE_BUF_SIZE);
    register_rpcs(cls, &ids[0], &ids[1], &ids[2], true);
    for (int i = 0; i < 3; i++)
        HG_Register_data(cls, ids[i], srv, NULL);
    return srv;

error:
    fprintf(stderr, "# forge server: could not expose the regions\n");
    forge_server_free(srv);
    return NULL;
}

bool forge_server_stopped(const struct forge_server *srv)
{
    return srv->stopped;
}

void forge_server_free(struct forge_server *srv)
{
    if (!srv)
        return;
    for (int d = 0; d < FORGE_NDESC - 1; d++)
        HG_Bulk_free(srv->bulk[d]);
    free(srv->mem);
    free(srv->image);
    free(srv);
}

static bool in_writable_region(size_t i)
{
    for (int d = FORGE_RO; d <= FORGE_RW; d++)
        if (writable((enum forge_desc)d) && i - region_off[d] < FORGE_REGION)
            return true;
    return false;
}

static uint64_t server_audit(struct forge_server *srv, bool writes_allowed)
{
    uint64_t bad = 0;

    if (memcmp(srv->mem, srv->image, FORGE_BUF_SIZE) == 0)
        return 0;
    for (size_t i = 0; i < FORGE_BUF_SIZE; i++)
        bad += srv->mem[i] != srv->image[i] && !(writes_allowed && in_writable_region(i));
    memcpy(srv->mem, srv->image, FORGE_BUF_SIZE);
    return bad;
}

uint64_t forge_server_audit(struct forge_server *srv)
{
    return server_audit(srv, false);
}

uint64_t forge_server_audit_writes(struct forge_server *srv)
{
    return server_audit(srv, true);
}

/* ------------------------------------------------------------------------- */
/* Client                                                                    */
/* ------------------------------------------------------------------------- */

struct done {
    int calls;
    hg_return_t ret;
};

static hg_return_t done_cb(const struct hg_cb_info *info)
{
    struct done *d = info->arg;
    d->calls++;
    d->ret = info->ret;
    return HG_SUCCESS;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Progress until the callback ran or timeout_ms passed; true if it ran. */
static bool run_until(struct forge_client *c, const struct done *d,
                      unsigned int timeout_ms)
{
    double deadline = now_ms() + timeout_ms;
    while (d->calls == 0 && now_ms() < deadline) {
        unsigned int n = 0;
        /* With a server to progress too, neither side may block. */
        HG_Progress(c->ctx, c->progress_peer ? 0 : 10);
        HG_Trigger(c->ctx, 0, 64, &n);
        if (c->progress_peer)
            c->progress_peer(c->progress_arg);
    }
    return d->calls > 0;
}

static void server_lost(struct forge_client *c, const char *what)
{
    if (c->dead)
        return;
    c->dead = true;
    if (c->alive && !c->alive(c->alive_arg)) {
        fprintf(stderr, "# forge: the server died (%s)\n", what);
        c->st.crashes++;
    } else {
        fprintf(stderr, "# forge: the server stopped answering (%s)\n", what);
        c->st.hangs++;
    }
}

/* Forward an RPC without input and wait; the handle is returned for output. */
static hg_return_t call(struct forge_client *c, hg_id_t id, hg_handle_t *h)
{
    struct done d = {0, HG_OTHER_ERROR};
    hg_return_t ret = HG_Create(c->ctx, c->server, id, h);

    if (ret == HG_SUCCESS)
        ret = HG_Forward(*h, done_cb, &d, NULL);
    if (ret == HG_SUCCESS && !run_until(c, &d, FORGE_RPC_MS)) {
        HG_Cancel(*h);
        run_until(c, &d, FORGE_RPC_MS);
        ret = HG_TIMEOUT;
    } else if (ret == HG_SUCCESS)
        ret = d.ret;
    return ret;
}

hg_return_t forge_client_init(struct forge_client *c, hg_class_t *cls, hg_context_t *ctx,
                              hg_addr_t server)
{
    hg_handle_t h = HG_HANDLE_NULL;
    forge_descs_t descs;
    hg_size_t size = FORGE_BUF_SIZE;

    c->cls = cls;
    c->ctx = ctx;
    c->server = server;
    register_rpcs(cls, &c->descs_id, &c->audit_id, &c->stop_id, false);
    hg_return_t ret = HG_Bulk_create(cls, 1, NULL, &size, HG_BULK_READWRITE, &c->local);
    if (ret != HG_SUCCESS)
        return ret;
    void *ptr;
    HG_Bulk_access(c->local, 0, size, HG_BULK_READWRITE, 1, &ptr, &size, NULL);
    c->local_buf = ptr;
    ret = call(c, c->descs_id, &h);
    if (ret == HG_SUCCESS && (ret = HG_Get_output(h, &descs)) == HG_SUCCESS) {
        for (int d = 0; d < FORGE_NDESC; d++) {
            c->desc_len[d] = descs.len[d];
            memcpy(c->descs[d], descs.bytes[d], descs.len[d]);
        }
        HG_Free_output(h, &descs);
    }
    HG_Destroy(h);
    return ret;
}

void forge_client_fini(struct forge_client *c)
{
    HG_Bulk_free(c->local);
    c->local = HG_BULK_NULL;
}

void forge_client_stop(struct forge_client *c)
{
    hg_handle_t h = HG_HANDLE_NULL;
    if (!c->dead && call(c, c->stop_id, &h) != HG_SUCCESS)
        server_lost(c, "stop");
    HG_Destroy(h);
}

/* A successful transfer moved only what its base descriptor allows. */
static bool legitimate(const struct forge_client *c, enum forge_desc base,
                       hg_bulk_op_t op, hg_size_t offset, hg_size_t size)
{
    if (offset > FORGE_REGION || size > FORGE_REGION - offset)
        return false;
    if (op == HG_BULK_PUSH)
        return writable(base);
    if (!readable(base))
        return false;
    for (size_t i = 0; i < size; i++)
        if (c->local_buf[i] != pattern(contents(base), offset + i))
            return false;
    return true;
}

static void violation(struct forge_client *c, const char *what, hg_bulk_op_t op,
                      hg_size_t offset, hg_size_t size)
{
    c->st.violations++;
    fprintf(stderr, "# forge VIOLATION [%s]: %s (%s of %llu bytes at offset %llu)\n",
            c->what, what, op == HG_BULK_PULL ? "pull" : "push", (unsigned long long)size,
            (unsigned long long)offset);
}

bool forge_transfer(struct forge_client *c, hg_bulk_t remote, hg_bulk_op_t op,
                    hg_size_t offset, hg_size_t size, hg_return_t *ret)
{
    struct done d = {0, HG_OTHER_ERROR};
    hg_op_id_t op_id = HG_OP_ID_NULL;

    *ret = HG_Bulk_transfer(c->ctx, done_cb, &d, op, c->server, remote, offset, c->local,
                            0, size, &op_id);
    if (*ret != HG_SUCCESS)
        return true; /* refused locally */
    if (run_until(c, &d, FORGE_XFER_MS)) {
        *ret = d.ret;
        return true;
    }
    HG_Bulk_cancel(op_id);
    if (!run_until(c, &d, FORGE_RPC_MS)) {
        /* The op still references our buffer: nothing more can be tried. */
        server_lost(c, "a cancelled transfer never completed");
    }
    *ret = d.ret;
    return false;
}

void forge_reconnect(struct forge_client *c)
{
    char name[256];
    hg_size_t len = sizeof(name);
    hg_addr_t addr;

    if (HG_Addr_to_string(c->cls, name, &len, c->server) != HG_SUCCESS)
        return;
    HG_Addr_set_remove(c->cls, c->server);
    if (HG_Addr_lookup2(c->cls, name, &addr) != HG_SUCCESS)
        return;
    HG_Addr_free(c->cls, c->server);
    c->server = addr;
}

static void audit(struct forge_client *c, hg_bulk_op_t op, hg_size_t offset,
                  hg_size_t size)
{
    hg_handle_t h = HG_HANDLE_NULL;
    forge_audit_t out;

    if (c->dead)
        return;
    hg_return_t ret = call(c, c->audit_id, &h);
    /* tcp drops the connection of a refused RMA: the next message may be
     * flushed with it, and one after it reconnects. */
    for (int retry = 0; retry < 3 && ret != HG_SUCCESS; retry++) {
        fprintf(stderr, "# forge: audit: %s; again\n", HG_Error_to_string(ret));
        if (ret == HG_HOSTUNREACH)
            forge_reconnect(c);
        HG_Destroy(h);
        ret = call(c, c->audit_id, &h);
    }
    if (ret == HG_SUCCESS)
        ret = HG_Get_output(h, &out);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "# forge: audit: %s\n", HG_Error_to_string(ret));
        server_lost(c, "audit");
    } else {
        if (out.bad) {
            char what[96];
            snprintf(what, sizeof(what), "%llu server bytes changed",
                     (unsigned long long)out.bad);
            violation(c, what, op, offset, size);
        }
        HG_Free_output(h, &out);
    }
    HG_Destroy(h);
}

void forge_try(struct forge_client *c, const unsigned char *desc, size_t len,
               enum forge_desc base, hg_bulk_op_t op, hg_size_t offset, hg_size_t size)
{
    hg_bulk_t remote = HG_BULK_NULL;
    hg_return_t ret;

    if (c->dead)
        return;
    c->st.tries++;
    if (HG_Bulk_deserialize(c->cls, &remote, desc, len) != HG_SUCCESS) {
        c->st.refused++;
        return;
    }
    if (size == (hg_size_t)-1) { /* what the descriptor describes, within our buffer */
        hg_size_t described = HG_Bulk_get_size(remote);
        size = described > offset ? described - offset : 0;
        if (size > FORGE_BUF_SIZE)
            size = FORGE_BUF_SIZE;
    }
    /* Pulls land on a canary; pushes carry the region's own bytes, except
     * into the read-only one where any write is wrong. */
    if (op == HG_BULK_PULL || !writable(base))
        memset(c->local_buf, 0xa5, FORGE_BUF_SIZE);
    else
        pattern_fill(c->local_buf, FORGE_BUF_SIZE, contents(base), (size_t)offset);
    if (!forge_transfer(c, remote, op, offset, size, &ret)) {
        c->st.hangs++;
        fprintf(stderr, "# forge: a %s of %llu bytes did not complete in %d ms\n",
                op == HG_BULK_PULL ? "pull" : "push", (unsigned long long)size,
                FORGE_XFER_MS);
    } else if (ret != HG_SUCCESS) {
        c->st.refused++;
    } else if (!legitimate(c, base, op, offset, size)) {
        violation(c, "a transfer the descriptor does not allow succeeded", op, offset,
                  size);
    }
    HG_Bulk_free(remote);
    audit(c, op, offset, size);
}

/* A legitimate transfer with desc (of region base) that must work, or the
 * test proves nothing. */
static void control_desc(struct forge_client *c, const unsigned char *desc, size_t len,
                         enum forge_desc base, hg_bulk_op_t op)
{
    unsigned int before = c->st.refused + c->st.hangs + c->st.violations;
    snprintf(c->what, sizeof(c->what), "legitimate, region %d", (int)base);
    forge_try(c, desc, len, base, op, 0, FORGE_REGION);
    if (c->st.refused + c->st.hangs + c->st.violations != before || c->dead) {
        c->st.controls_failed++;
        fprintf(stderr, "# forge: legitimate %s on region %d failed\n",
                op == HG_BULK_PULL ? "pull" : "push", (int)base);
    }
}

static void control(struct forge_client *c, enum forge_desc base, hg_bulk_op_t op)
{
    control_desc(c, c->descs[base], c->desc_len[base], base, op);
}

static void bounds_and_permissions(struct forge_client *c, const unsigned char *desc,
                                   size_t len, enum forge_desc base)
{
    static const hg_size_t past_end[][2] = {
        {0, FORGE_REGION + 1}, {FORGE_REGION - 1, 2}, {FORGE_REGION, 1}, {1u << 30, 16}};

    snprintf(c->what, sizeof(c->what), "region %d, bounds and permission", (int)base);
    for (size_t i = 0; i < sizeof(past_end) / sizeof(*past_end); i++) {
        forge_try(c, desc, len, base, HG_BULK_PULL, past_end[i][0], past_end[i][1]);
        forge_try(c, desc, len, base, HG_BULK_PUSH, past_end[i][0], past_end[i][1]);
    }
    /* The wrong direction for the region's permission. */
    if (!writable(base))
        forge_try(c, desc, len, base, HG_BULK_PUSH, 0, FORGE_REGION);
    if (!readable(base))
        forge_try(c, desc, len, base, HG_BULK_PULL, 0, FORGE_REGION);
}

/* A descriptor of this process (its own buffer), used against the server. */
static void foreign(struct forge_client *c)
{
    unsigned char *mine = malloc(FORGE_REGION);
    unsigned char buf[FORGE_DESC_MAX];
    hg_size_t size = FORGE_REGION;
    hg_bulk_t bulk;

    if (!mine)
        return;
    pattern_fill(mine, FORGE_REGION, FORGE_FOREIGN_SEED, 0);
    snprintf(c->what, sizeof(c->what), "a descriptor of the client");
    void *ptr = mine;
    if (HG_Bulk_create(c->cls, 1, &ptr, &size, HG_BULK_READWRITE, &bulk) == HG_SUCCESS) {
        hg_size_t len = HG_Bulk_get_serialize_size(bulk, 0);
        if (len <= sizeof(buf) &&
            HG_Bulk_serialize(buf, sizeof(buf), 0, bulk) == HG_SUCCESS) {
            /* Judged as the freed region: nothing of the server is reachable. */
            forge_try(c, buf, (size_t)len, FORGE_FREED, HG_BULK_PULL, 0, FORGE_REGION);
            forge_try(c, buf, (size_t)len, FORGE_FREED, HG_BULK_PUSH, 0, FORGE_REGION);
        }
        HG_Bulk_free(bulk);
    }
    free(mine);
}

/* Every byte of desc in [from, to) changed three ways; both directions on
 * what the result describes. */
static void mutations(struct forge_client *c, const unsigned char *desc, size_t len,
                      enum forge_desc base, size_t from, size_t to)
{
    unsigned char *forged = malloc(len);

    for (size_t i = from; forged && i < to && !c->dead; i++)
        for (int way = 0; way < 3; way++) {
            memcpy(forged, desc, len);
            unsigned char b = forged[i];
            forged[i] = way == 0   ? (unsigned char)(b ^ 0xff)
                        : way == 1 ? (unsigned char)(b + 1)
                                   : 0xff;
            if (forged[i] == b)
                continue;
            snprintf(c->what, sizeof(c->what), "region %d, byte %zu, %s", (int)base, i,
                     way == 0   ? "xor 0xff"
                     : way == 1 ? "+1"
                                : "set 0xff");
            forge_try(c, forged, len, base, HG_BULK_PULL, 0, (hg_size_t)-1);
            forge_try(c, forged, len, base, HG_BULK_PUSH, 0, (hg_size_t)-1);
        }
    free(forged);
}

/* Region base's descriptor as its owner serializes it with HG_BULK_EAGER
 * (src/bulk/bulk.c): option bit 1 in byte 6, then data_len (u64, little
 * endian) and the region's bytes. Returns its size; out has room for it. */
static size_t eager_desc(const struct forge_client *c, enum forge_desc base,
                         unsigned char *out)
{
    size_t len = c->desc_len[base];

    memcpy(out, c->descs[base], len);
    out[FORGE_OPTIONS_AT] |= FORGE_OPTION_EAGER;
    for (int i = 0; i < 8; i++)
        out[len + i] = (unsigned char)((uint64_t)FORGE_REGION >> (8 * i));
    pattern_fill(out + len + 8, FORGE_REGION, contents(base), 0);
    return len + 8 + FORGE_REGION;
}

/* A forgery the descriptor parser must refuse as malformed. */
static void must_refuse(struct forge_client *c, const unsigned char *desc, size_t len,
                        const char *what)
{
    hg_bulk_t remote = HG_BULK_NULL;

    c->st.tries++;
    hg_return_t ret = HG_Bulk_deserialize(c->cls, &remote, desc, len);
    if (ret == HG_PROTOCOL_ERROR) {
        c->st.refused++;
        return;
    }
    HG_Bulk_free(remote);
    snprintf(c->what, sizeof(c->what), "eager, %s", what);
    violation(c, HG_Error_to_string(ret), HG_BULK_PULL, 0, len);
}

/* Descriptors carrying the data (HG_BULK_EAGER): pulls are served from the
 * bytes they carry and must be right; a push into the read-only region, data
 * lengths that disagree with the handle or run past the buffer, and data on
 * a write-only handle are refused. */
static void eager_attacks(struct forge_client *c)
{
    size_t max = FORGE_DESC_MAX + 8 + FORGE_REGION;
    unsigned char *desc = malloc(max), *forged = malloc(max);

    if (!desc || !forged) {
        free(desc);
        free(forged);
        return;
    }
    size_t len = eager_desc(c, FORGE_RO, desc), at = c->desc_len[FORGE_RO];
    control_desc(c, desc, len, FORGE_RO, HG_BULK_PULL);
    bounds_and_permissions(c, desc, len, FORGE_RO);
    mutations(c, desc, len, FORGE_RO, FORGE_OPTIONS_AT, FORGE_OPTIONS_AT + 1);
    mutations(c, desc, len, FORGE_RO, at, at + 8);

    memcpy(forged, desc, len);
    forged[at]++;
    must_refuse(c, forged, len, "data length one more than the handle's");
    forged[16]++; /* the handle's length (u64 at 16) too: data past the buffer */
    must_refuse(c, forged, len, "data past the end of the buffer");
    must_refuse(c, desc, len - 1, "data cut short");
    must_refuse(c, desc, at + 4, "data length cut");
    len = eager_desc(c, FORGE_WO, forged);
    must_refuse(c, forged, len, "data on a write-only handle");
    free(desc);
    free(forged);
}

void forge_attack_all(struct forge_client *c)
{
    control(c, FORGE_RO, HG_BULK_PULL);
    control(c, FORGE_WO, HG_BULK_PUSH);
    control(c, FORGE_RW, HG_BULK_PULL);
    control(c, FORGE_RW, HG_BULK_PUSH);
    for (int d = FORGE_RO; d <= FORGE_RW; d++)
        bounds_and_permissions(c, c->descs[d], c->desc_len[d], (enum forge_desc)d);
    snprintf(c->what, sizeof(c->what), "a freed handle");
    forge_try(c, c->descs[FORGE_FREED], c->desc_len[FORGE_FREED], FORGE_FREED,
              HG_BULK_PULL, 0, FORGE_REGION);
    forge_try(c, c->descs[FORGE_FREED], c->desc_len[FORGE_FREED], FORGE_FREED,
              HG_BULK_PUSH, 0, FORGE_REGION);
    foreign(c);
    for (int d = FORGE_RO; d <= FORGE_RW; d++)
        mutations(c, c->descs[d], c->desc_len[d], (enum forge_desc)d, 0, c->desc_len[d]);
    eager_attacks(c);
}

void forge_print_summary(const char *transport, const struct forge_stats *st)
{
    printf("# bulk-forge %s: tries %u, refused %u, violations %u, hangs %u, crashes %u"
           "%s\n",
           transport, st->tries, st->refused, st->violations, st->hangs, st->crashes,
           st->controls_failed ? " (legitimate transfers FAILED)" : "");
    fflush(stdout);
}

/*
 * fuzz_bulk_transfer.c -- libFuzzer target: a fuzzed bulk descriptor used for
 * real transfers (pull, then push) against a live server.
 *
 * One process holds two ofi+tcp classes on 127.0.0.1: the server of
 * tests/bulk_forge.h (regions inside secret bytes) and a client; while the
 * client waits it progresses the server too. Every transfer is bounded in
 * time (FORGE_XFER_MS, then cancelled).
 *
 * Input: byte 0: bits 0-2 the live descriptor it starts from (modulo
 * FORGE_NDESC: read-only, write-only, read-write, read-only in 3 segments,
 * freed); bit 3: the rest is the descriptor itself (raw) instead of a
 * delta xored onto the live one; bit 4: a delta also gives the length.
 * Bytes 1-2, 3-4: offset and size (little endian; size 0xffff: all that the
 * descriptor describes from the offset, at most the client's buffer).
 * The rest: the descriptor bytes or the delta.
 * A raw descriptor names a server of another run: its keys are stale.
 * Seeds: live_* are a header and no delta (each live descriptor as it is,
 * 1 and 3 segments; one range past the end); raw_* are real descriptors of
 * 1 and 3 segments from another process.
 *
 * Oracles (abort): a pull that succeeds filled its whole size with bytes of
 * the readable regions; no transfer changes the server's memory outside the
 * writable regions (a pull changes nothing); none hangs; ASan/UBSan/LSan.
 * At start, legitimate transfers must work (or the target proves nothing).
 */
#include "bulk_forge.h"
#include "mercury.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_INFO "ofi+tcp://127.0.0.1"
#define FZ_HEADER 5

static struct forge_server *fz_srv;
static hg_context_t *fz_srv_ctx;
static struct forge_client fz_client;

static void fz_fail(const char *what)
{
    fprintf(stderr, "fuzz_bulk_transfer: %s\n", what);
    abort();
}

static void progress_server(void *arg)
{
    unsigned int n = 0;
    (void)arg;
    HG_Progress(fz_srv_ctx, 0);
    HG_Trigger(fz_srv_ctx, 0, 64, &n);
}

static void start_server(hg_addr_t *addr)
{
    char name[256];
    hg_size_t len = sizeof(name);
    hg_class_t *cls = HG_Init(FZ_INFO, HG_TRUE);
    hg_addr_t self = HG_ADDR_NULL;

    fz_srv_ctx = cls ? HG_Context_create(cls) : NULL;
    fz_srv = fz_srv_ctx ? forge_server_create(cls) : NULL;
    if (!fz_srv || HG_Addr_self(cls, &self) != HG_SUCCESS ||
        HG_Addr_to_string(cls, name, &len, self) != HG_SUCCESS)
        fz_fail("could not start the server on " FZ_INFO);
    HG_Addr_free(cls, self);

    hg_class_t *ccls = HG_Init(FZ_INFO, HG_FALSE);
    hg_context_t *cctx = ccls ? HG_Context_create(ccls) : NULL;
    if (!cctx || HG_Addr_lookup2(ccls, name, addr) != HG_SUCCESS)
        fz_fail("could not start the client");
    fz_client.progress_peer = progress_server;
    if (forge_client_init(&fz_client, ccls, cctx, *addr) != HG_SUCCESS)
        fz_fail("could not fetch the server's descriptors");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    hg_addr_t server = HG_ADDR_NULL;
    struct forge_client *c = &fz_client;

    (void)argc;
    (void)argv;
    setenv("HG_LOG_LEVEL", "none", 0);
    start_server(&server);
    /* Legitimate transfers, every region, judged exactly. */
    forge_try(c, c->descs[FORGE_RO], c->desc_len[FORGE_RO], FORGE_RO, HG_BULK_PULL, 0,
              FORGE_REGION);
    forge_try(c, c->descs[FORGE_SEGS], c->desc_len[FORGE_SEGS], FORGE_SEGS, HG_BULK_PULL,
              0, FORGE_REGION);
    forge_try(c, c->descs[FORGE_WO], c->desc_len[FORGE_WO], FORGE_WO, HG_BULK_PUSH, 0,
              FORGE_REGION);
    forge_try(c, c->descs[FORGE_RW], c->desc_len[FORGE_RW], FORGE_RW, HG_BULK_PUSH, 0,
              FORGE_REGION);
    if (c->st.refused || c->st.violations || c->st.hangs || c->dead)
        fz_fail("a legitimate transfer failed");
    return 0;
}

/* The descriptor the input makes; its length. */
static size_t make_desc(const uint8_t *data, size_t size, unsigned char *desc)
{
    uint8_t mode = data[0];
    enum forge_desc base = (enum forge_desc)((mode & 7) % FORGE_NDESC);
    const unsigned char *live = fz_client.descs[base];
    size_t live_len = fz_client.desc_len[base];
    const uint8_t *in = data + FZ_HEADER;
    size_t n = size - FZ_HEADER;

    if (n > FORGE_DESC_MAX)
        n = FORGE_DESC_MAX;
    if (mode & 8) {
        memcpy(desc, in, n);
        return n;
    }
    size_t len = mode & 16 || n > live_len ? n : live_len;
    for (size_t i = 0; i < len; i++)
        desc[i] = (unsigned char)((i < live_len ? live[i] : 0) ^ (i < n ? in[i] : 0));
    return len;
}

static void fz_transfer(hg_bulk_t remote, hg_bulk_op_t op, hg_size_t offset,
                        hg_size_t size)
{
    struct forge_client *c = &fz_client;
    hg_return_t ret;

    /* Pulls land on a byte no readable region holds; pushes carry one no
     * secret byte equals, so that a write outside the regions shows. */
    memset(c->local_buf, op == HG_BULK_PULL ? 0xa5 : 0x5a, FORGE_BUF_SIZE);
    if (!forge_transfer(c, remote, op, offset, size, &ret))
        fz_fail("a transfer did not complete in time");
    if (c->dead)
        fz_fail("a cancelled transfer never completed");
    if (ret == HG_SUCCESS && op == HG_BULK_PULL)
        for (hg_size_t i = 0; i < size; i++)
            if (!forge_readable_byte(c->local_buf[i]))
                fz_fail("a pull returned bytes outside the readable regions");
    uint64_t bad = op == HG_BULK_PULL ? forge_server_audit(fz_srv)
                                      : forge_server_audit_writes(fz_srv);
    if (bad)
        fz_fail("a transfer changed the server's memory outside the writable regions");
    if (ret != HG_SUCCESS)
        forge_reconnect(c); /* tcp may have dropped the connection */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char desc[FORGE_DESC_MAX];
    hg_bulk_t remote = HG_BULK_NULL;

    if (size < FZ_HEADER)
        return 0;
    size_t len = make_desc(data, size, desc);
    if (HG_Bulk_deserialize(fz_client.cls, &remote, desc, len) != HG_SUCCESS)
        return 0;
    hg_size_t offset = (hg_size_t)data[1] | (hg_size_t)data[2] << 8;
    hg_size_t xfer = (hg_size_t)data[3] | (hg_size_t)data[4] << 8;
    if (xfer == 0xffff) {
        hg_size_t described = HG_Bulk_get_size(remote);
        xfer = described > offset ? described - offset : 0;
    }
    if (xfer > FORGE_BUF_SIZE)
        xfer = FORGE_BUF_SIZE;
    fz_transfer(remote, HG_BULK_PULL, offset, xfer);
    fz_transfer(remote, HG_BULK_PUSH, offset, xfer);
    HG_Bulk_free(remote);
    return 0;
}

/*
 * bulk_forge.h -- forged bulk descriptors against a live server.
 *
 * The server exposes three 4 KiB regions (read-only, write-only, read-write)
 * inside a 64 KiB buffer whose other bytes are a "secret" pattern, the
 * read-only one again in three segments, and hands their serialized
 * descriptors (plus one of a handle it freed) to the client. Only the bytes
 * of the readable regions have the high bit clear (forge_readable_byte).
 * The client pulls and pushes with legitimate, out-of-range, wrong-permission,
 * freed, foreign and byte-mutated descriptors; after each transfer the server
 * compares its whole buffer with the image it started from. Shared by the
 * forked-server test (tests/test_bulk_forge.c), the mpirun one
 * (mpitests/test_bulk_forge_mpi.c) and the end-to-end fuzz target.
 */
#ifndef BULK_FORGE_H
#define BULK_FORGE_H

#include "mercury.h"
#include "mercury_bulk.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FORGE_BUF_SIZE ((size_t)64 * 1024)
#define FORGE_REGION ((size_t)4096)
#define FORGE_DESC_MAX 512
#define FORGE_XFER_MS 2000 /* a transfer taking longer is a hang */

enum forge_desc { FORGE_RO, FORGE_WO, FORGE_RW, FORGE_SEGS, FORGE_FREED, FORGE_NDESC };

struct forge_stats {
    unsigned int tries, refused, violations, hangs, crashes;
    unsigned int controls_failed; /* legitimate transfers that did not work */
};

/* ---- server ---- */
struct forge_server;

/* Register the RPCs on cls and expose the regions. */
struct forge_server *forge_server_create(hg_class_t *cls);
/* True once the client asked the server to stop. */
bool forge_server_stopped(const struct forge_server *srv);
void forge_server_free(struct forge_server *srv);
/* Bytes of the buffer that differ from the server's image (0: untouched);
 * restores the image. */
uint64_t forge_server_audit(struct forge_server *srv);
/* The same, not counting bytes of the writable regions (which any push into
 * them may legitimately change); restores the image. */
uint64_t forge_server_audit_writes(struct forge_server *srv);
/* Could b have been pulled from a readable region? (Secret bytes, and the
 * write-only region's, cannot.) */
bool forge_readable_byte(unsigned char b);

/* ---- client ---- */
struct forge_client {
    hg_class_t *cls;
    hg_context_t *ctx;
    hg_addr_t server; /* owned: the client may look it up again */
    hg_id_t descs_id, audit_id, stop_id;
    hg_bulk_t local; /* FORGE_BUF_SIZE, read-write */
    unsigned char *local_buf;
    unsigned char descs[FORGE_NDESC][FORGE_DESC_MAX];
    uint32_t desc_len[FORGE_NDESC];
    /* Is the server process still there? NULL: assume it is. */
    bool (*alive)(void *arg);
    void *alive_arg;
    /* A server in this process: progress it while waiting. NULL: none. */
    void (*progress_peer)(void *arg);
    void *progress_arg;
    bool dead;     /* the server crashed or stopped answering: stop trying */
    char what[64]; /* the attack under way, for the log */
    struct forge_stats st;
};

/* Register the RPCs, create the local buffer and fetch the descriptors. */
hg_return_t forge_client_init(struct forge_client *c, hg_class_t *cls, hg_context_t *ctx,
                              hg_addr_t server);
void forge_client_fini(struct forge_client *c);

/* One transfer with a descriptor given as bytes, judged against what the
 * base descriptor legitimately allows; then the server audits its buffer. */
void forge_try(struct forge_client *c, const unsigned char *desc, size_t len,
               enum forge_desc base, hg_bulk_op_t op, hg_size_t offset, hg_size_t size);
/* One transfer against remote, bounded in time (FORGE_XFER_MS, then a
 * cancel); false if it hung. *ret is its outcome. */
bool forge_transfer(struct forge_client *c, hg_bulk_t remote, hg_bulk_op_t op,
                    hg_size_t offset, hg_size_t size, hg_return_t *ret);
/* Forget the server's address (tcp drops a connection on a refused RMA) and
 * look it up again. */
void forge_reconnect(struct forge_client *c);
/* Every attack listed in the file comment. */
void forge_attack_all(struct forge_client *c);
/* Ask the server to stop. */
void forge_client_stop(struct forge_client *c);

/* "TRANSPORT: tries N, refused N, violations N, hangs N, crashes N". */
void forge_print_summary(const char *transport, const struct forge_stats *st);

#endif /* BULK_FORGE_H */

/*
 * fault_rpc.h -- RPCs of the fault and load test server (tests/fault_server.c):
 * pull (the server pulls a client region, optionally in slow chunks, each
 * chunk an hgx request with a deadline), sleep, expose, stats, quit.
 */
#ifndef FAULT_RPC_H
#define FAULT_RPC_H

#include "mercury.h"
#include "mercury_bulk.h"
#include "mercury_macros.h"
#include "mercury_proc_bulk.h"

/* Pull size bytes from bulk in chunks of chunk bytes, delay_ms between
 * chunks; check the pattern test_fill(seed) unless seed is 0. */
MERCURY_GEN_PROC(ft_pull_in_t, ((hg_bulk_t)(bulk))((uint64_t)(size))((uint64_t)(chunk))(
                                   (uint32_t)(delay_ms))((uint32_t)(client))(
                                   (uint32_t)(seq))((uint32_t)(seed)))
MERCURY_GEN_PROC(ft_pull_out_t, ((int32_t)(ret))((uint32_t)(seq)))
MERCURY_GEN_PROC(ft_sleep_in_t, ((uint32_t)(ms)))
MERCURY_GEN_PROC(ft_sleep_out_t, ((int32_t)(ret)))
MERCURY_GEN_PROC(ft_expose_in_t, ((uint64_t)(size))((uint32_t)(seed)))
MERCURY_GEN_PROC(ft_expose_out_t, ((hg_bulk_t)(bulk)))
MERCURY_GEN_PROC(ft_stats_in_t, ((uint32_t)(client))((uint32_t)(mark)))
MERCURY_GEN_PROC(
    ft_stats_out_t,
    ((uint64_t)(client_rpcs))((uint64_t)(rpcs))((uint64_t)(jobs_ok))(
        (uint64_t)(jobs_failed))((uint64_t)(xfer_issued))((uint64_t)(xfer_done))(
        (uint64_t)(xfer_failed))((uint64_t)(dup_seq))((uint64_t)(rss_mark_kb))(
        (uint64_t)(rss_kb))((int64_t)(fds_mark))((int64_t)(fds)))

#define FT_MAX_CLIENTS 64

struct ft_ids {
    hg_id_t pull, sleep, expose, stats, quit;
};

void ft_register(hg_class_t *cls, struct ft_ids *ids, bool server);

/* The server child for test_server_start(); info may be a full address
 * ("ofi+tcp://127.0.0.1:PORT") to listen on a given port. */
int ft_server_main(const char *info, int publish_fd);

/* Resident set (kB) from /proc/self/statm, open fds in /proc/self/fd. */
long ft_rss_kb(void);
long ft_count_fds(void);

#endif /* FAULT_RPC_H */

/*
 * hgx_info.h -- the parts of hgx-info: listing (protocols, interfaces,
 * library versions), a listening class (--listen, --serve) and the ping
 * client (--ping). Each returns the program's exit status.
 */
#ifndef HGX_INFO_H
#define HGX_INFO_H

#include <mercury.h>
#include <mercury_macros.h>

#include <stdbool.h>

/** Name of the RPC a --serve server answers; a ping carries a sequence number
 * and the answer echoes it, so a late answer is never taken for the current one. */
#define HGX_INFO_PING_RPC "hgx_info_ping"
MERCURY_GEN_PROC(hgx_info_ping_t, ((uint64_t)(seq)))

/** Print the built-in plugins and protocols with the interfaces each can use. */
int hgx_info_list_protocols(void);

/** Print every environment parameter hgx reads; 0 on success. */
int hgx_info_list_params(void);

/** Print hgx's, Mercury's and the transports' versions (built with, running). */
void hgx_info_list_versions(void);

/**
 * Open a listening class on info and print its address; with serve, answer
 * pings until SIGINT or SIGTERM.
 */
int hgx_info_listen(const char *info, bool serve);

/** Ping addr count times, each bounded by timeout_ms; 0 when all answered. */
int hgx_info_ping(const char *addr, unsigned int count, unsigned int timeout_ms);

#endif

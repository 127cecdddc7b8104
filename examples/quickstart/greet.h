/*
 * greet.h -- the one RPC of the quick start, shared by its server and client.
 *
 * "greet" takes a name and a delay; the server answers "Hello, NAME!" once
 * the delay has passed. A delay lets the client show a deadline and a cancel
 * against a server that is slow to answer.
 */
#ifndef QUICKSTART_GREET_H
#define QUICKSTART_GREET_H

#include <mercury.h>
#include <mercury_macros.h>
#include <mercury_proc_string.h>

#define GREET_RPC "greet"

MERCURY_GEN_PROC(greet_in_t, ((hg_const_string_t)(name))((uint32_t)(delay_ms)))
MERCURY_GEN_PROC(greet_out_t, ((hg_const_string_t)(greeting)))

#endif /* QUICKSTART_GREET_H */

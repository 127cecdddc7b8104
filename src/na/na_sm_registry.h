/*
 * na_sm_registry.h -- Mercury's SM names ("na+sm://PID-ID") for the classes
 * of an alias with sm_names: each class publishes its plugin address under
 * its process id and a per-process id, and a lookup of such a name reads it;
 * the name is published under the plugin's key of the class too, so that an
 * address prints as its name (private to the core).
 */
#ifndef NA_SM_REGISTRY_H
#define NA_SM_REGISTRY_H

#include "na_plugin.h"

/* Give na_class the next id of this process and publish its plugin address
 * under PID-ID. A class that cannot publish works, unreachable by that name
 * (logged). */
void na_sm_registry_publish(na_class_t *na_class);

/* Remove na_class's entry (its finalize). */
void na_sm_registry_withdraw(na_class_t *na_class);

/* True when rest (what follows "://") has Mercury's form "PID-ID" or the
 * old "PID/ID" rather than the serving plugin's. */
bool na_sm_registry_is_name(const char *rest);

/* Look rest (na_sm_registry_is_name) up: the live class's address, else an
 * unreachable address (na_unreachable_new). NA_INVALID_ARG for a malformed
 * name. */
na_return_t na_sm_registry_lookup(na_class_t *na_class, const char *rest,
                                  na_addr_t **addr_p);

/* Mercury's name of addr when addr is an na+sm class's (this class, or a
 * peer that published its name): "na+sm://PID-ID" in buf[size], true; false
 * (buf untouched) for a peer with no name. plugin_str is addr's plugin form. */
bool na_sm_registry_name(na_class_t *na_class, na_addr_t *addr, const char *plugin_str,
                         char *buf, size_t size);

/* Remove the entries of this user's processes that no longer exist. */
void na_sm_registry_cleanup(void);

#endif /* NA_SM_REGISTRY_H */

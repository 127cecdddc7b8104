/*
 * na.c -- NA core: class and context life, addresses and messages (memory
 * handles and put/get are in na_mem.c). Every user argument is checked here
 * once, so plugins receive only valid input; the plugin is then reached
 * through its ops table.
 */
#include "na_core.h"
#include "na_info.h"
#include "na_rma.h"
#include "na_sm_registry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

const struct na_ops *const na_plugin_table[] = {
#define X(ops) &ops,
    HGX_NA_PLUGIN_LIST
#undef X
        NULL,
};

static const char *const na_return_names[] = {
#define X(a) #a,
    NA_RETURN_VALUES
#undef X
};

const char *const na_cb_type_names[] = {
#define X(a) #a,
    NA_CB_TYPES
#undef X
};

const char *NA_Error_to_string(na_return_t errnum)
{
    if ((unsigned)errnum >= NA_RETURN_MAX)
        return "UNDEFINED/UNRECOGNIZED NA ERROR";
    return na_return_names[errnum];
}

void NA_Version_get(unsigned int *major, unsigned int *minor, unsigned int *patch)
{
    if (major)
        *major = NA_VERSION_MAJOR;
    if (minor)
        *minor = NA_VERSION_MINOR;
    if (patch)
        *patch = NA_VERSION_PATCH;
}

void NA_Set_log_level(const char *level)
{
    hgx_log_set_level("na", level); /* and the plugins below it */
}

bool na_plugin_has_protocol(const struct na_ops *ops, const char *protocol_name)
{
    if (ops->check_protocol)
        return ops->check_protocol(protocol_name);
    for (const char *const *p = ops->protocols; p && *p; p++)
        if (strcmp(*p, protocol_name) == 0)
            return true;
    return false;
}

/* True if filter (NULL, "plugin", "protocol" or "plugin+protocol", split
 * at the '+' into filter_plugin and filter_proto) selects class+protocol. */
static bool na_protocol_selected(const char *filter_plugin, const char *filter_proto,
                                 const char *class_name, const char *protocol)
{
    if (filter_plugin && strcmp(filter_plugin, class_name) != 0 &&
        strcmp(filter_plugin, protocol) != 0)
        return false;
    return !filter_proto || strcmp(filter_proto, protocol) == 0;
}

/* Prepend class+protocol to *head; false when out of memory. */
static bool na_protocol_push(struct na_protocol_info **head, const char *class_name,
                             const char *protocol)
{
    struct na_protocol_info *e = calloc(1, sizeof(*e));
    if (!e)
        return false;
    e->next = *head;
    *head = e;
    return (e->class_name = strdup(class_name)) &&
           (e->protocol_name = strdup(protocol)) && (e->device_name = strdup(""));
}

/* Each plugin's protocols, and each alias once (from the plugin that serves it). */
static bool na_protocol_list(const char *filter_plugin, const char *filter_proto,
                             struct na_protocol_info **head)
{
    for (const struct na_ops *const *p = na_plugin_table; *p; p++) {
        for (const char *const *proto = (*p)->protocols; proto && *proto; proto++)
            if (na_protocol_selected(filter_plugin, filter_proto, (*p)->class_name,
                                     *proto) &&
                !na_protocol_push(head, (*p)->class_name, *proto))
                return false;
        for (const struct na_alias *a = (*p)->aliases; a && a->class_name; a++) {
            const struct na_ops *server = NULL;
            if (na_alias_find(a->class_name, a->protocol, &server) == a &&
                na_protocol_selected(filter_plugin, filter_proto, a->class_name,
                                     a->protocol) &&
                !na_protocol_push(head, a->class_name, a->protocol))
                return false;
        }
    }
    return true;
}

na_return_t NA_Get_protocol_info(const char *info_string,
                                 struct na_protocol_info **info_p)
{
    char *filter_plugin = NULL, *filter_proto = NULL;
    struct na_protocol_info *head = NULL;

    if (!info_p)
        return NA_INVALID_ARG;
    if (info_string) {
        filter_plugin = strdup(info_string);
        if (!filter_plugin)
            return NA_NOMEM;
        char *plus = strchr(filter_plugin, '+');
        if (plus) {
            *plus = '\0';
            filter_proto = plus + 1;
        }
    }
    bool ok = na_protocol_list(filter_plugin, filter_proto, &head);
    free(filter_plugin);
    if (!ok) {
        NA_Free_protocol_info(head);
        return NA_NOMEM;
    }
    *info_p = head;
    return NA_SUCCESS;
}

void NA_Free_protocol_info(struct na_protocol_info *info)
{
    while (info) {
        struct na_protocol_info *next = info->next;
        free(info->class_name);
        free(info->protocol_name);
        free(info->device_name);
        free(info);
        info = next;
    }
}

na_class_t *NA_Initialize(const char *info_string, bool listen)
{
    return NA_Initialize_opt(info_string, listen, NULL);
}

/*
 * The caller's init info as of its version: Mercury 2.4.1 reads the NA 4.x
 * fields from a 4.x struct and every field from 5.0 on (6.0 added none);
 * a field the version lacks keeps its default. Version 0 with an info, or one
 * outside 4.0-6.x, is refused.
 */
static bool na_init_info_from_version(unsigned int version, const struct na_init_info *in,
                                      struct na_init_info *out)
{
    if (!in)
        return true;
    if (NA_VERSION_LT(version, NA_VERSION(4, 0)) ||
        NA_VERSION_GE(version, NA_VERSION(NA_VERSION_MAJOR + 1, 0))) {
        HGX_LOG_ERROR(NA, "init info version %u.%u is not supported (4.0 to %u.x)",
                      NA_MAJOR(version), NA_MINOR(version), NA_VERSION_MAJOR);
        return false;
    }
    *out = *in;
    if (NA_VERSION_LT(version, NA_VERSION(5, 0)))
        out->traffic_class = NA_TC_UNSPEC;
    return true;
}

/* Fields Mercury hands to what hgx has no counterpart of: accepted, kept
 * out of every plugin's way, and said so in the debug log. */
static void na_init_info_note_ignored(const struct na_init_info *init)
{
    if (init->auth_key)
        HGX_LOG_DEBUG(NA, "auth_key ignored: no hgx transport takes an authorization "
                          "key (Mercury passes it to libfabric's cxi provider)");
    if (init->request_mem_device)
        HGX_LOG_DEBUG(NA, "request_mem_device ignored: hgx registers host memory "
                          "only (NA_MEM_TYPE_HOST)");
}

na_class_t *NA_Initialize_opt(const char *info_string, bool listen,
                              const struct na_init_info *na_init_info)
{
    /* As Mercury: 4.0 is the last version whose init info was not versioned. */
    return NA_Initialize_opt2(info_string, listen, NA_VERSION(4, 0), na_init_info);
}

na_class_t *NA_Initialize_opt2(const char *info_string, bool listen, unsigned int version,
                               const struct na_init_info *na_init_info)
{
    struct na_init_info init = NA_INIT_INFO_INITIALIZER;
    struct na_info info;
    na_class_t *na_class = NULL;

    na_return_t ret = na_info_parse(info_string, &info);
    if (ret != NA_SUCCESS) {
        HGX_LOG_ERROR(
            NA,
            "bad info string \"%s\": expected \"[plugin+]protocol[://host[:port]]\", "
            "e.g. \"ofi+tcp\" (%s)",
            info_string ? info_string : "(null)", NA_Error_to_string(ret));
        return NULL;
    }
    if (!na_init_info_from_version(version, na_init_info, &init))
        goto error;
    info.init_info = &init;
    if (info.init_info->thread_mode & ~NA_THREAD_MODE_SINGLE) {
        HGX_LOG_ERROR(NA, "thread mode 0x%x has bits other than NA_THREAD_MODE_SINGLE",
                      (unsigned)info.init_info->thread_mode);
        goto error;
    }
    na_init_info_note_ignored(info.init_info);

    const struct na_alias *alias = NULL;
    const struct na_ops *ops = na_info_resolve(&info, info_string, &alias);
    if (!ops)
        goto error;
    na_class = calloc(1, sizeof(*na_class));
    if (!na_class || !(na_class->protocol_name = strdup(info.protocol_name))) {
        HGX_LOG_ERROR(NA, "out of memory");
        goto error;
    }
    na_class->ops = ops;
    na_class->alias = alias;
    na_class->listen = listen;
    na_class->max_contexts =
        info.init_info->max_contexts ? info.init_info->max_contexts : 1;
    na_class->progress_mode = info.init_info->progress_mode;
    na_class->single =
        (info.init_info->thread_mode & NA_THREAD_MODE_SINGLE) == NA_THREAD_MODE_SINGLE;
    na_lead_init(&na_class->lead);

    ret = ops->initialize(na_class, &info, listen);
    if (ret != NA_SUCCESS) {
        hgx_log_write(ops->log_subsys, HGX_LOG_ERROR, __FILE__, __LINE__, __func__,
                      "could not initialize %s+%s: %s", info.plugin_name,
                      info.protocol_name, NA_Error_to_string(ret));
        goto error;
    }
    na_class->msg.max_unexpected = ops->msg_get_max_unexpected_size(na_class);
    na_class->msg.max_expected = ops->msg_get_max_expected_size(na_class);
    na_class->msg.unexpected_header = ops->msg_get_unexpected_header_size
                                          ? ops->msg_get_unexpected_header_size(na_class)
                                          : 0;
    na_class->msg.expected_header = ops->msg_get_expected_header_size
                                        ? ops->msg_get_expected_header_size(na_class)
                                        : 0;
    na_class->msg.max_tag = ops->msg_get_max_tag(na_class);
    if (alias && alias->sm_names)
        na_sm_registry_publish(na_class);
    na_info_free(&info);
    return na_class;

error:
    if (na_class) {
        na_lead_fini(&na_class->lead);
        free(na_class->protocol_name);
    }
    free(na_class);
    na_info_free(&info);
    return NULL;
}

na_return_t NA_Finalize(na_class_t *na_class)
{
    if (!na_class)
        return NA_SUCCESS;
    /* Ops live in contexts, and a context with ops pending cannot be destroyed. */
    int contexts = atomic_load(&na_class->n_contexts);
    if (contexts > 0) {
        HGX_LOG_ERROR(NA, "cannot finalize: %d context(s) alive", contexts);
        return NA_BUSY;
    }
    long addrs = atomic_load(&na_class->n_addrs), mems = atomic_load(&na_class->n_mem);
    if (addrs > 0 || mems > 0)
        HGX_LOG_WARNING(
            NA, "finalizing with %ld address(es) and %ld memory handle(s) not freed",
            addrs, mems);
    /* Withdrawn first: a lookup from now on finds the class gone. */
    na_sm_registry_withdraw(na_class);
    na_return_t ret = na_class->ops->finalize(na_class);
    if (ret != NA_SUCCESS)
        return ret;
    na_lead_fini(&na_class->lead);
    free(na_class->protocol_name);
    free(na_class);
    return NA_SUCCESS;
}

void NA_Cleanup(void)
{
    na_sm_registry_cleanup();
    for (const struct na_ops *const *p = na_plugin_table; *p; p++)
        if ((*p)->cleanup)
            (*p)->cleanup();
}

bool NA_Has_opt_feature(na_class_t *na_class, unsigned long flags)
{
    (void)na_class;
    return flags == 0; /* no optional feature (multi-recv) is provided */
}

const char *NA_Get_class_name(const na_class_t *na_class)
{
    if (!na_class)
        return NULL;
    return na_class->alias ? na_class->alias->class_name : na_class->ops->class_name;
}

const char *NA_Get_class_protocol(const na_class_t *na_class)
{
    if (!na_class)
        return NULL;
    return na_class->alias ? na_class->alias->protocol : na_class->protocol_name;
}

bool NA_Is_listening(const na_class_t *na_class)
{
    return na_class ? na_class->listen : false;
}

/*---------------------------------------------------------------- contexts */

na_context_t *NA_Context_create(na_class_t *na_class)
{
    return NA_Context_create_id(na_class, 0);
}

na_context_t *NA_Context_create_id(na_class_t *na_class, uint8_t id)
{
    NA_CHECK_CLASS(na_class, NULL);
    if (id >= na_class->max_contexts) {
        HGX_LOG_ERROR(NA, "context id %u out of range (max_contexts %u)", id,
                      na_class->max_contexts);
        return NULL;
    }
    na_context_t *context = calloc(1, sizeof(*context));
    if (!context) {
        HGX_LOG_ERROR(NA, "out of memory");
        return NULL;
    }
    context->na_class = na_class;
    context->id = id;
    context->wake_fd = -1;
    atomic_init(&context->interrupted, false);
    hgx_lock_init_mode(&context->cq_lock, na_class->single);
    if (na_class->ops->wakes_contexts && !na_class->single) {
        context->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (context->wake_fd < 0) {
            HGX_LOG_ERROR(NA, "eventfd for the context failed: %s", strerror(errno));
            free(context);
            return NULL;
        }
    }
    na_return_t ret = na_class->ops->context_create(na_class, context, id);
    if (ret != NA_SUCCESS) {
        HGX_LOG_ERROR(NA, "plugin could not create context: %s", NA_Error_to_string(ret));
        if (context->wake_fd >= 0)
            close(context->wake_fd);
        free(context);
        return NULL;
    }
    atomic_fetch_add(&na_class->n_contexts, 1);
    return context;
}

na_return_t NA_Context_destroy(na_class_t *na_class, na_context_t *context)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!context)
        return NA_SUCCESS;
    if (context->na_class != na_class) {
        HGX_LOG_ERROR(NA, "context %p belongs to another class", (void *)context);
        return NA_INVALID_ARG;
    }
    /* Finished first: a post racing with this check can only over-report. */
    unsigned long finished = atomic_load(&context->n_finished);
    long pending = (long)(atomic_load(&context->n_posted) - finished);
    unsigned int queued = atomic_load(&context->cq_count);
    if (pending > 0 || queued > 0) {
        HGX_LOG_ERROR(NA,
                      "cannot destroy context: %ld op(s) pending, %u callback(s) queued",
                      pending, queued);
        return NA_BUSY;
    }
    na_return_t ret = na_class->ops->context_destroy(na_class, context);
    if (ret != NA_SUCCESS)
        return ret;
    if (context->wake_fd >= 0)
        close(context->wake_fd);
    free(context);
    atomic_fetch_sub(&na_class->n_contexts, 1);
    return NA_SUCCESS;
}

/*---------------------------------------------------------------- addresses */

void na_addr_init(na_class_t *na_class, na_addr_t *addr)
{
    atomic_init(&addr->refcount, 1);
    addr->na_class = na_class;
    addr->owned = false;
    addr->unreachable = NULL;
    atomic_fetch_add(&na_class->n_addrs, 1);
}

void na_addr_init_owned(na_class_t *na_class, na_addr_t *addr)
{
    atomic_init(&addr->refcount, 1);
    addr->na_class = na_class;
    addr->owned = true;
    addr->unreachable = NULL;
}

bool na_addr_valid(na_class_t *na_class, na_addr_t *addr)
{
    if (!addr || addr->na_class != na_class) {
        HGX_LOG_ERROR(NA, "invalid address %p for class %p", (void *)addr,
                      (void *)na_class);
        return false;
    }
    return true;
}

na_return_t NA_Addr_lookup(na_class_t *na_class, const char *name, na_addr_t **addr_p)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!name || !addr_p || strlen(name) > NA_INFO_STRING_MAX) {
        HGX_LOG_ERROR(NA, "NULL or oversized address name / output pointer");
        return NA_INVALID_ARG;
    }
    /* Accept "plugin+proto://..." and the bare "proto://..." form. */
    char renamed[NA_INFO_STRING_MAX + 1];
    const char *bare = NULL;
    na_return_t ret =
        na_alias_lookup_name(na_class, name, renamed, sizeof(renamed), &bare);
    if (ret != NA_SUCCESS)
        return ret;
    const char *sep = strstr(bare, "://");
    if (na_class->alias && na_class->alias->sm_names && sep &&
        na_sm_registry_is_name(sep + 3))
        ret = na_sm_registry_lookup(na_class, sep + 3, addr_p);
    else
        ret = na_class->ops->addr_lookup(na_class, bare, addr_p);
    if (ret != NA_SUCCESS)
        HGX_LOG_ERROR(NA, "lookup of \"%s\" failed: %s", name, NA_Error_to_string(ret));
    return ret;
}

void NA_Addr_free(na_class_t *na_class, na_addr_t *addr)
{
    if (!addr || !na_class)
        return;
    if (!na_addr_valid(na_class, addr))
        return;
    if (addr->owned && na_class->ops->addr_owned_release) {
        na_class->ops->addr_owned_release(na_class, addr);
        return;
    }
    int refs = hgx_int_add(&addr->refcount, -1, na_class->single);
    if (refs == 1) {
        atomic_fetch_sub(&na_class->n_addrs, 1);
        if (addr->unreachable)
            free(addr);
        else
            na_class->ops->addr_destroy(na_class, addr);
    } else if (refs == 2 && addr->owned) {
        atomic_fetch_sub(&na_class->n_addrs, 1); /* its users are gone (na_addr_ref) */
    }
}

na_return_t NA_Addr_set_remove(na_class_t *na_class, na_addr_t *addr)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!na_addr_valid(na_class, addr))
        return NA_INVALID_ARG;
    return na_class->ops->addr_set_remove && !addr->unreachable
               ? na_class->ops->addr_set_remove(na_class, addr)
               : NA_SUCCESS;
}

na_return_t NA_Addr_self(na_class_t *na_class, na_addr_t **addr_p)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!addr_p)
        return NA_INVALID_ARG;
    return na_class->ops->addr_self(na_class, addr_p);
}

na_return_t NA_Addr_dup(na_class_t *na_class, na_addr_t *addr, na_addr_t **new_addr_p)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!na_addr_valid(na_class, addr) || !new_addr_p)
        return NA_INVALID_ARG;
    hgx_int_add(&addr->refcount, 1, na_class->single);
    *new_addr_p = addr;
    return NA_SUCCESS;
}

bool NA_Addr_cmp(na_class_t *na_class, na_addr_t *addr1, na_addr_t *addr2)
{
    if (!na_class || !addr1 || !addr2)
        return addr1 == addr2;
    if (addr1->na_class != na_class || addr2->na_class != na_class)
        return false;
    if (addr1 == addr2)
        return true;
    if (addr1->unreachable || addr2->unreachable)
        return addr1->unreachable && addr2->unreachable &&
               strcmp(addr1->unreachable, addr2->unreachable) == 0;
    return na_class->ops->addr_cmp(na_class, addr1, addr2);
}

bool NA_Addr_is_self(na_class_t *na_class, na_addr_t *addr)
{
    if (!na_class || !addr || addr->na_class != na_class || addr->unreachable)
        return false;
    return na_class->ops->addr_is_self(na_class, addr);
}

na_return_t NA_Addr_to_string(na_class_t *na_class, char *buf, size_t *buf_size,
                              na_addr_t *addr)
{
    char tmp[NA_INFO_STRING_MAX + 1];
    size_t need = sizeof(tmp);

    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!buf_size || !na_addr_valid(na_class, addr)) {
        HGX_LOG_ERROR(NA, "NULL buf_size or invalid address");
        return NA_INVALID_ARG;
    }
    na_return_t ret = NA_SUCCESS;
    if (addr->unreachable) /* already the public name */
        snprintf(tmp, sizeof(tmp), "%s", addr->unreachable);
    else
        ret = na_class->ops->addr_to_string(na_class, tmp, &need, addr);
    if (ret == NA_SUCCESS && !addr->unreachable) {
        char name[NA_INFO_STRING_MAX + 1];
        if (na_class->alias && na_class->alias->sm_names &&
            na_sm_registry_name(na_class, addr, tmp, name, sizeof(name)))
            memcpy(tmp, name, strlen(name) + 1);
        else
            ret = na_alias_addr_string(na_class, tmp, sizeof(tmp));
    }
    if (ret != NA_SUCCESS)
        return ret;
    need = strlen(tmp) + 1;
    if (buf && *buf_size >= need) {
        memcpy(buf, tmp, need);
        *buf_size = need;
        return NA_SUCCESS;
    }
    bool probe = buf == NULL;
    *buf_size = need;
    if (probe)
        return NA_SUCCESS;
    HGX_LOG_ERROR(NA, "buffer too small for address string (%zu bytes needed)", need);
    return NA_OVERFLOW;
}

size_t NA_Addr_get_serialize_size(na_class_t *na_class, na_addr_t *addr)
{
    if (!na_class || !addr)
        return 0;
    if (addr->unreachable) /* what it would take; serializing it is refused */
        return strlen(addr->unreachable) + 1;
    return na_class->ops->addr_get_serialize_size(na_class, addr);
}

na_return_t NA_Addr_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                              na_addr_t *addr)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!buf || !na_addr_valid(na_class, addr))
        return NA_INVALID_ARG;
    if (addr->unreachable) {
        /* The plugins' serialized forms name live peers only. */
        HGX_LOG_ERROR(NA, "%s is unreachable: its address has no serialized form",
                      addr->unreachable);
        return NA_HOSTUNREACH;
    }
    if (buf_size < na_class->ops->addr_get_serialize_size(na_class, addr)) {
        HGX_LOG_ERROR(NA, "buffer too small to serialize address");
        return NA_OVERFLOW;
    }
    return na_class->ops->addr_serialize(na_class, buf, buf_size, addr);
}

na_return_t NA_Addr_deserialize(na_class_t *na_class, na_addr_t **addr_p, const void *buf,
                                size_t buf_size)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!addr_p || !buf || buf_size == 0) {
        HGX_LOG_ERROR(NA, "NULL or empty buffer");
        return NA_INVALID_ARG;
    }
    /* The arguments were checked above: a plugin's refusal now can only be
     * about the bytes, which is a protocol error on every plugin. */
    na_return_t ret = na_class->ops->addr_deserialize(na_class, addr_p, buf, buf_size);
    return ret == NA_INVALID_ARG ? NA_PROTOCOL_ERROR : ret;
}

/*---------------------------------------------------------------- messages */

size_t na_rma_piece_max(const na_class_t *na_class)
{
    size_t max = na_class ? na_class->ops->rma_piece_max : 0;
    return max ? max : NA_RMA_PIECE_MAX_DEFAULT;
}

size_t NA_Msg_get_max_unexpected_size(const na_class_t *na_class)
{
    return na_class ? na_class->msg.max_unexpected : 0;
}

size_t NA_Msg_get_max_expected_size(const na_class_t *na_class)
{
    return na_class ? na_class->msg.max_expected : 0;
}

size_t NA_Msg_get_unexpected_header_size(const na_class_t *na_class)
{
    return na_class ? na_class->msg.unexpected_header : 0;
}

size_t NA_Msg_get_expected_header_size(const na_class_t *na_class)
{
    return na_class ? na_class->msg.expected_header : 0;
}

na_tag_t NA_Msg_get_max_tag(const na_class_t *na_class)
{
    return na_class ? na_class->msg.max_tag : 0;
}

void *NA_Msg_buf_alloc(na_class_t *na_class, size_t buf_size, unsigned long flags,
                       void **plugin_data_p)
{
    NA_CHECK_CLASS(na_class, NULL);
    if (buf_size == 0 || !plugin_data_p)
        return NULL;
    if (na_class->ops->msg_buf_alloc)
        return na_class->ops->msg_buf_alloc(na_class, buf_size, flags, plugin_data_p);
    *plugin_data_p = NULL;
    void *buf = calloc(1, buf_size);
    if (!buf)
        HGX_LOG_ERROR(NA, "out of memory for a %zu-byte message buffer", buf_size);
    return buf;
}

void NA_Msg_buf_free(na_class_t *na_class, void *buf, void *plugin_data)
{
    if (!na_class || !buf)
        return;
    if (na_class->ops->msg_buf_free)
        na_class->ops->msg_buf_free(na_class, buf, plugin_data);
    else
        free(buf);
}

static na_return_t na_msg_init(na_class_t *na_class, void *buf, size_t buf_size,
                               size_t header)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!buf || buf_size < header) {
        HGX_LOG_ERROR(NA, "buffer of %zu bytes cannot hold the %zu-byte header", buf_size,
                      header);
        return NA_INVALID_ARG;
    }
    return NA_SUCCESS;
}

na_return_t NA_Msg_init_unexpected(na_class_t *na_class, void *buf, size_t buf_size)
{
    na_return_t ret =
        na_msg_init(na_class, buf, buf_size, NA_Msg_get_unexpected_header_size(na_class));
    if (ret == NA_SUCCESS && na_class->ops->msg_init_unexpected)
        ret = na_class->ops->msg_init_unexpected(na_class, buf, buf_size);
    return ret;
}

na_return_t NA_Msg_init_expected(na_class_t *na_class, void *buf, size_t buf_size)
{
    return na_msg_init(na_class, buf, buf_size,
                       NA_Msg_get_expected_header_size(na_class));
}

/* Say which check of a message post failed (cold: na_msg_check found one). */
__attribute__((cold, noinline)) static na_return_t
na_msg_refuse(na_class_t *na_class, na_context_t *context, const void *buf,
              size_t buf_size, size_t size_max, size_t header, na_addr_t *addr,
              bool need_addr, na_tag_t tag)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!context || !buf) {
        HGX_LOG_ERROR(NA, "NULL context or buffer");
        return NA_INVALID_ARG;
    }
    if (buf_size > size_max) {
        HGX_LOG_ERROR(NA, "message of %zu bytes exceeds the maximum of %zu", buf_size,
                      size_max);
        return NA_MSGSIZE;
    }
    if (buf_size < header) {
        HGX_LOG_ERROR(NA, "message of %zu bytes is shorter than the %zu-byte header",
                      buf_size, header);
        return NA_INVALID_ARG;
    }
    if (need_addr && !na_addr_valid(na_class, addr))
        return NA_INVALID_ARG;
    HGX_LOG_ERROR(NA, "tag %u above the maximum %u", tag, na_class->msg.max_tag);
    return NA_INVALID_ARG;
}

/* Checks shared by all message posts (receives pass size_max SIZE_MAX and
 * no tag check). Inline, as one predicted branch: every message passes here.
 * A message's context id names a context of the peer, which this class
 * cannot know: it is passed on unchecked (docs/mercury-compat.md). */
static inline na_return_t na_msg_check(na_class_t *na_class, na_context_t *context,
                                       const void *buf, size_t buf_size, size_t size_max,
                                       size_t header, na_addr_t *addr, bool need_addr,
                                       na_tag_t tag, bool check_tag)
{
    if (__builtin_expect(na_class && context && buf && buf_size <= size_max &&
                             buf_size >= header &&
                             (!need_addr || (addr && addr->na_class == na_class)) &&
                             (!check_tag || tag <= na_class->msg.max_tag),
                         1))
        return NA_SUCCESS;
    return na_msg_refuse(na_class, context, buf, buf_size, size_max, header, addr,
                         need_addr, tag);
}

na_return_t NA_Msg_send_unexpected(na_class_t *na_class, na_context_t *context,
                                   na_cb_t callback, void *arg, const void *buf,
                                   size_t buf_size, void *plugin_data,
                                   na_addr_t *dest_addr, uint8_t dest_id, na_tag_t tag,
                                   na_op_id_t *op_id)
{
    na_return_t ret = na_msg_check(
        na_class, context, buf, buf_size, NA_Msg_get_max_unexpected_size(na_class),
        NA_Msg_get_unexpected_header_size(na_class), dest_addr, true, tag, true);
    if (ret != NA_SUCCESS)
        return ret;
    if (__builtin_expect(dest_addr->unreachable != NULL, 0))
        return na_unreachable_post(na_class, context, op_id, NA_CB_SEND_UNEXPECTED,
                                   callback, arg);
    NA_POST(na_class, context, op_id, NA_CB_SEND_UNEXPECTED, callback, arg,
            na_class->ops->msg_send_unexpected(na_class, context, op_id, buf, buf_size,
                                               plugin_data, dest_addr, dest_id, tag));
}

na_return_t NA_Msg_recv_unexpected(na_class_t *na_class, na_context_t *context,
                                   na_cb_t callback, void *arg, void *buf,
                                   size_t buf_size, void *plugin_data, na_op_id_t *op_id)
{
    na_return_t ret =
        na_msg_check(na_class, context, buf, buf_size, SIZE_MAX,
                     NA_Msg_get_unexpected_header_size(na_class), NULL, false, 0, false);
    if (ret != NA_SUCCESS)
        return ret;
    NA_POST(na_class, context, op_id, NA_CB_RECV_UNEXPECTED, callback, arg,
            na_class->ops->msg_recv_unexpected(na_class, context, op_id, buf, buf_size,
                                               plugin_data));
}

na_return_t NA_Msg_multi_recv_unexpected(na_class_t *na_class, na_context_t *context,
                                         na_cb_t callback, void *arg, void *buf,
                                         size_t buf_size, void *plugin_data,
                                         na_op_id_t *op_id)
{
    (void)na_class, (void)context, (void)callback, (void)arg, (void)buf, (void)buf_size;
    (void)plugin_data, (void)op_id;
    HGX_LOG_ERROR(NA, "multi-recv is not supported (check NA_Has_opt_feature first)");
    return NA_OPNOTSUPPORTED;
}

na_return_t NA_Msg_send_expected(na_class_t *na_class, na_context_t *context,
                                 na_cb_t callback, void *arg, const void *buf,
                                 size_t buf_size, void *plugin_data, na_addr_t *dest_addr,
                                 uint8_t dest_id, na_tag_t tag, na_op_id_t *op_id)
{
    na_return_t ret = na_msg_check(
        na_class, context, buf, buf_size, NA_Msg_get_max_expected_size(na_class),
        NA_Msg_get_expected_header_size(na_class), dest_addr, true, tag, true);
    if (ret != NA_SUCCESS)
        return ret;
    if (__builtin_expect(dest_addr->unreachable != NULL, 0))
        return na_unreachable_post(na_class, context, op_id, NA_CB_SEND_EXPECTED,
                                   callback, arg);
    NA_POST(na_class, context, op_id, NA_CB_SEND_EXPECTED, callback, arg,
            na_class->ops->msg_send_expected(na_class, context, op_id, buf, buf_size,
                                             plugin_data, dest_addr, dest_id, tag));
}

na_return_t NA_Msg_recv_expected(na_class_t *na_class, na_context_t *context,
                                 na_cb_t callback, void *arg, void *buf, size_t buf_size,
                                 void *plugin_data, na_addr_t *source_addr,
                                 uint8_t source_id, na_tag_t tag, na_op_id_t *op_id)
{
    na_return_t ret = na_msg_check(na_class, context, buf, buf_size, SIZE_MAX,
                                   NA_Msg_get_expected_header_size(na_class), source_addr,
                                   true, tag, true);
    if (ret != NA_SUCCESS)
        return ret;
    /* Nothing will ever come from it: failed at once, not left to a cancel. */
    if (__builtin_expect(source_addr->unreachable != NULL, 0))
        return na_unreachable_post(na_class, context, op_id, NA_CB_RECV_EXPECTED,
                                   callback, arg);
    NA_POST(na_class, context, op_id, NA_CB_RECV_EXPECTED, callback, arg,
            na_class->ops->msg_recv_expected(na_class, context, op_id, buf, buf_size,
                                             plugin_data, source_addr, source_id, tag));
}

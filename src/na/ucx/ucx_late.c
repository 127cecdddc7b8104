/*
 * ucx_late.c -- expected messages that arrive after their receive was
 * cancelled. UCX keeps a tagged message that no receive matches in its
 * unexpected queue for as long as the worker lives: a response that comes
 * after its forward timed out would stay there, one per cancel, for the
 * life of the process, and UCX reports each one at finalize ("unexpected
 * tag-receive descriptor ... was not matched"). An expected message's tag
 * names one operation (ucx_int.h), so the tag of a cancelled receive is
 * remembered, in a table of UCX_LATE_SLOTS indexed by the NA tag (HG's tags
 * are consecutive, so a burst of that many timeouts is remembered whole; a
 * tag whose slot another takes is forgotten), and a message that arrives
 * later with one is taken from UCX and dropped. A receive posted again with
 * a remembered tag takes its message as usual: the tag is forgotten.
 * Finalize drops whatever UCX still holds.
 *
 * Only the oldest message UCX holds is looked at, once per progress pass
 * that saw events while tags are remembered: hgx posts every expected
 * receive before its message can come (a response's receive before the
 * request is sent), so the queue holds late messages only, unless an NA
 * program sends an expected message before its receive is posted; such a
 * message then holds the late ones behind it until it is received.
 */
#include "ucx_int.h"

#include <stdlib.h>

/* Late messages taken from UCX and dropped, over every class (test hook). */
static atomic_long ucx_late_total;

long na_ucx_late_dropped_count(void);
long na_ucx_late_dropped_count(void)
{
    return atomic_load(&ucx_late_total);
}

void ucx_late_init(struct ucx_class *cls)
{
    for (unsigned i = 0; i < UCX_LATE_SLOTS; i++)
        cls->late[i] = UCX_LATE_NONE;
}

static ucp_tag_t *ucx_late_slot(struct ucx_class *cls, ucp_tag_t tag)
{
    return &cls->late[(uint32_t)tag % UCX_LATE_SLOTS];
}

/* A receive of tag was cancelled: its message may still come. Lock held. */
void ucx_late_expect(struct ucx_class *cls, ucp_tag_t tag)
{
    ucp_tag_t *slot = ucx_late_slot(cls, tag);
    if (*slot == UCX_LATE_NONE)
        cls->late_live++;
    *slot = tag;
}

/* Forget tag if it is remembered; true if it was. Lock held. */
static bool ucx_late_take_tag(struct ucx_class *cls, ucp_tag_t tag)
{
    ucp_tag_t *slot = ucx_late_slot(cls, tag);
    if (*slot != tag)
        return false;
    *slot = UCX_LATE_NONE;
    cls->late_live--;
    return true;
}

/* A receive of tag is posted: its message is wanted again. Lock held. */
void ucx_late_forget(struct ucx_class *cls, ucp_tag_t tag)
{
    (void)ucx_late_take_tag(cls, tag);
}

static void ucx_late_recv_cb(void *request, ucs_status_t status,
                             const ucp_tag_recv_info_t *info, void *user_data)
{
    (void)status;
    (void)info;
    if (user_data) {
        struct ucx_class *cls = ((void **)user_data)[0];
        cls->late_receiving--;
        free(user_data);
    }
    ucp_request_free(request);
}

/* Take message msg of length len from UCX and drop it. A message longer
 * than any this plugin sends is received truncated (UCX then ends it with
 * UCS_ERR_MESSAGE_TRUNCATED): the buffer stays bounded whatever a peer
 * claims. Lock held. */
static void ucx_late_take(struct ucx_class *cls, ucp_tag_message_h msg, size_t len)
{
    size_t keep = len < UCX_MSG_SIZE_MAX ? len : UCX_MSG_SIZE_MAX;
    /* The class pointer, then room for the data (the callback frees both). */
    void **buf = malloc(sizeof(void *) + keep);
    if (!buf) {
        /* Nothing else can take it off UCX's queue: receive it truncated. */
        keep = 0;
        buf = NULL;
    } else {
        buf[0] = cls;
    }
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                                 UCP_OP_ATTR_FIELD_USER_DATA,
                                 .cb.recv = ucx_late_recv_cb,
                                 .user_data = buf};
    ucs_status_ptr_t sp =
        ucp_tag_msg_recv_nbx(cls->worker, buf ? buf + 1 : NULL, keep, msg, &param);
    if (UCS_PTR_IS_PTR(sp)) {
        if (buf) /* the callback frees buf and the request */
            cls->late_receiving++;
    } else {
        free(buf); /* ended already: no callback */
    }
    atomic_fetch_add(&ucx_late_total, 1);
}

/* Drop the late messages at the head of UCX's unexpected queue. Lock held. */
void ucx_late_drain(struct ucx_class *cls)
{
    ucp_tag_recv_info_t info;
    while (cls->late_live) {
        if (!ucp_tag_probe_nb(cls->worker, 0, 0, 0, &info))
            return;
        if (*ucx_late_slot(cls, info.sender_tag) != info.sender_tag)
            return; /* a message whose receive is yet to be posted */
        ucp_tag_message_h msg =
            ucp_tag_probe_nb(cls->worker, info.sender_tag, ~(ucp_tag_t)0, 1, &info);
        if (!msg)
            return;
        (void)ucx_late_take_tag(cls, info.sender_tag);
        HGX_LOG_DEBUG(UCX,
                      "dropping an expected message of %zu bytes (tag 0x%llx) "
                      "that came after its receive was cancelled",
                      info.length, (unsigned long long)info.sender_tag);
        ucx_late_take(cls, msg, info.length);
    }
}

static bool ucx_late_receiving(void *arg)
{
    return ((struct ucx_class *)arg)->late_receiving > 0;
}

/* Finalize: drop every tagged message UCX still holds, late or never
 * received, so that the worker is destroyed with none. Lock held (or the
 * class is no longer shared). */
void ucx_late_drain_all(struct ucx_class *cls)
{
    ucp_tag_recv_info_t info;
    ucp_tag_message_h msg;
    while ((msg = ucp_tag_probe_nb(cls->worker, 0, 0, 1, &info)))
        ucx_late_take(cls, msg, info.length);
    ucx_progress_while(cls, ucx_late_receiving, cls);
}

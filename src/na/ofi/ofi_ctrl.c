/*
 * ofi_ctrl.c -- the RMA check of providers that do not check RMA at the target:
 * control messages, target and origin sides.
 */
#include "ofi_int.h"

_Static_assert(OFI_RAW_ADDR_MAX <= HGX_OFI_LEASE_PEER_MAX, "a lease names its target");

static void ofi_ctrl_post_locked(struct ofi_class *cls, struct ofi_ctrl_rx *rx)
{
    void *desc = cls->ctrl_rx_mr ? fi_mr_desc(cls->ctrl_rx_mr) : NULL;
    ssize_t rc = fi_trecv(cls->ep, rx->buf, sizeof(rx->buf), desc, FI_ADDR_UNSPEC,
                          OFI_TAG_CTRL, cls->recv_ignore, &rx->ctx.fi);

    if (rc == 0 && !rx->posted) {
        rx->posted = true;
        atomic_fetch_sub(&cls->ctrl_unposted, 1);
    } else if (rc != 0 && rx->posted) {
        rx->posted = false;
        atomic_fetch_add(&cls->ctrl_unposted, 1);
    }
    if (rc != 0 && rc != -FI_EAGAIN && rc != -FI_ENOMEM)
        HGX_LOG_ERROR(OFI, "posting a control receive failed: %s", fi_strerror((int)-rc));
}

/* Post the receives the provider refused before (full queues). */
static void ofi_ctrl_repost(struct ofi_class *cls)
{
    if (atomic_load(&cls->ctrl_unposted) == 0)
        return;
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    for (size_t i = 0; i < OFI_CTRL_RECVS && atomic_load(&cls->ctrl_unposted) > 0; i++)
        if (!cls->ctrl_rx[i].posted)
            ofi_ctrl_post_locked(cls, &cls->ctrl_rx[i]);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
}

na_return_t ofi_ctrl_init(struct ofi_class *cls)
{
    na_return_t ret = NA_SUCCESS;

    /* Control messages are injected: no completion, no buffer to keep. */
    HGX_CHECK(OFI, cls->info->tx_attr->inject_size < sizeof(cls->ctrl_rx->buf), out, ret,
              NA_PROTOCOL_ERROR,
              "ofi+%s injects %zu bytes, the RMA check needs %zu: RMA would be unchecked",
              cls->proto->name, cls->info->tx_attr->inject_size,
              sizeof(cls->ctrl_rx->buf));
    cls->ctrl_rx = calloc(OFI_CTRL_RECVS, sizeof(*cls->ctrl_rx));
    HGX_CHECK(OFI, !cls->ctrl_rx, out, ret, NA_NOMEM,
              "out of memory for control receives");
    if (cls->mr_mode & FI_MR_LOCAL) {
        cls->ctrl_rx_mr = ofi_mr_open(
            cls, cls->ctrl_rx, OFI_CTRL_RECVS * sizeof(*cls->ctrl_rx), FI_RECV, &ret);
        if (!cls->ctrl_rx_mr)
            goto out;
    }
    atomic_store(&cls->ctrl_unposted, OFI_CTRL_RECVS);
    for (size_t i = 0; i < OFI_CTRL_RECVS; i++)
        cls->ctrl_rx[i].ctx.ctrl = true;
    ofi_ctrl_repost(cls);
out:
    return ret;
}

static ssize_t ofi_ctrl_inject(struct ofi_class *cls, struct ofi_peer *peer,
                               const unsigned char *buf, size_t len)
{
    fi_addr_t fi_addr;
    if (ofi_peer_fi_addr(cls, peer, &fi_addr) != NA_SUCCESS)
        return -FI_EADDRNOTAVAIL;
    ofi_activity_mark(cls); /* an answer or the RMA follows: poll for it promptly */
    return fi_tinject(cls->ep, buf, len, fi_addr, OFI_TAG_CTRL);
}

/* Send a control message now, or from progress while the provider refuses
 * it (EAGAIN). check: a CHECK, whose op waits for its answer under cookie;
 * with NA_NO_RETRY its refusal is the op's at once (an answer is no
 * caller's op: it always waits). 0, or the error that will not go away. */
static ssize_t ofi_ctrl_send(struct ofi_class *cls, struct ofi_peer *peer, bool check,
                             uint64_t cookie, const unsigned char *buf, size_t len)
{
    ssize_t rc = ofi_ctrl_inject(cls, peer, buf, len);
    if (rc != -FI_EAGAIN || (check && cls->no_retry))
        return rc;
    struct ofi_ctrl_out *o = malloc(sizeof(*o) + len);
    if (!o)
        return -FI_ENOMEM;
    uint64_t now = hgx_clock_now_ms();
    ofi_peer_ref(cls, peer);
    o->peer = peer;
    o->deadline_ms = now + cls->retry_timeout_ms;
    o->check = check;
    o->cookie = cookie;
    o->len = len;
    memcpy(o->buf, buf, len);
    /* Held before progress can find the message, which releases it. */
    ofi_mutex_lock(cls, &cls->lock);
    ofi_reach_hold_locked(cls, peer, now);
    ofi_mutex_unlock(cls, &cls->lock);
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    o->next = cls->outbox;
    cls->outbox = o;
    atomic_fetch_add(&cls->outbox_count, 1);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    return 0;
}

/* A control message refused again: -FI_EHOSTUNREACH once its peer is found
 * gone, -FI_ETIMEDOUT past its deadline, else -FI_EAGAIN (it keeps
 * waiting). */
static ssize_t ofi_ctrl_refused_again(struct ofi_class *cls, struct ofi_ctrl_out *o,
                                      uint64_t now_ms)
{
    ofi_mutex_lock(cls, &cls->lock);
    int gone = ofi_reach_check_locked(cls, o->peer, now_ms);
    ofi_mutex_unlock(cls, &cls->lock);
    return gone                       ? -FI_EHOSTUNREACH
           : now_ms >= o->deadline_ms ? -FI_ETIMEDOUT
                                      : -FI_EAGAIN;
}

/* Origin: the op stops waiting; the caller now owns its next step. */
static void ofi_check_claim_locked(struct ofi_class *cls, struct ofi_op *oop)
{
    na_slots_remove(&cls->cookies, (uint32_t)oop->cookie);
    ofi_list_remove(&cls->checking, &oop->check_link);
    oop->checking = false;
    if (oop->check_reach) {
        ofi_mutex_lock(cls, &cls->lock);
        ofi_reach_release_locked(oop->peer);
        ofi_mutex_unlock(cls, &cls->lock);
        oop->check_reach = false;
    }
}

/* Claim the op of a cookie if it is still waiting: the op, or NULL. */
static struct ofi_op *ofi_check_claim(struct ofi_class *cls, uint64_t cookie)
{
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    struct ofi_op *oop = na_slots_get_cookie(&cls->cookies, cookie);
    if (oop)
        ofi_check_claim_locked(cls, oop);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    return oop;
}

/* A control message left the outbox, sent (rc 0) or dropped: a dropped
 * CHECK ends its op if that still waits. */
static void ofi_ctrl_out_end(struct ofi_class *cls, struct ofi_ctrl_out *o, ssize_t rc)
{
    struct ofi_op *oop = NULL;

    ofi_mutex_lock(cls, &cls->lock);
    ofi_reach_release_locked(o->peer);
    ofi_mutex_unlock(cls, &cls->lock);
    if (rc != 0 && o->check)
        oop = ofi_check_claim(cls, o->cookie);
    /* A peer found gone was logged once by ofi_reach_check_locked. */
    if (rc != 0 && rc != -FI_EHOSTUNREACH && (oop || !o->check)) {
        char why[96];
        snprintf(why, sizeof(why), "%s: %s",
                 oop ? "its RMA check was not sent" : "dropped a control message",
                 rc == -FI_ETIMEDOUT ? "refused for too long (peer unreachable?)"
                                     : fi_strerror((int)-rc));
        if (oop)
            ofi_log_post_error(cls, oop, why);
        else
            HGX_LOG_ERROR(OFI, "%s", why);
    }
    if (oop)
        ofi_op_finish(cls, oop,
                      rc == -FI_ETIMEDOUT ? NA_HOSTUNREACH : ofi_na_error((int)-rc));
    ofi_peer_put(cls, o->peer);
    free(o);
}

/* Send what the provider refused before; order does not matter (each
 * message stands alone). */
static void ofi_ctrl_flush(struct ofi_class *cls)
{
    struct ofi_ctrl_out *list, *keep = NULL;
    size_t kept = 0;

    if (atomic_load(&cls->outbox_count) == 0)
        return;
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    list = cls->outbox;
    cls->outbox = NULL;
    atomic_store(&cls->outbox_count, 0);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    uint64_t now = hgx_clock_now_ms();
    for (struct ofi_ctrl_out *o = list, *next; o; o = next) {
        next = o->next;
        ssize_t rc = ofi_ctrl_inject(cls, o->peer, o->buf, o->len);
        if (rc == -FI_EAGAIN &&
            (rc = ofi_ctrl_refused_again(cls, o, now)) == -FI_EAGAIN) {
            o->next = keep;
            keep = o;
            kept++;
            continue;
        }
        ofi_ctrl_out_end(cls, o, rc);
    }
    if (!keep)
        return;
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    struct ofi_ctrl_out **tail = &keep;
    while (*tail)
        tail = &(*tail)->next;
    *tail = cls->outbox;
    cls->outbox = keep;
    atomic_fetch_add(&cls->outbox_count, kept);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
}

static const char *ofi_check_refusal(na_return_t ret)
{
    return ret == NA_ACCESS        ? "unknown or freed region"
           : ret == NA_INVALID_ARG ? "outside the region"
           : ret == NA_PERMISSION  ? "access not granted"
                                   : NA_Error_to_string(ret);
}

/* Target: judge every range of a CHECK against our live registrations and
 * answer its sender. */
static void ofi_ctrl_check(struct ofi_class *cls, const struct hgx_ofi_ctrl *msg)
{
    unsigned char raw[OFI_RAW_ADDR_MAX], answer[HGX_OFI_CTRL_HDR_SIZE];
    size_t raw_len;
    struct ofi_peer *peer;
    struct hgx_ofi_range r = {0};
    uint64_t keys[HGX_OFI_CHECK_MAX_RANGES];
    na_return_t status = NA_SUCCESS;
    uint32_t lease_us = 0;

    if (!ofi_hdr_parse(cls, msg->sender, OFI_HDR_SIZE, raw, &raw_len) ||
        ofi_peer_get(cls, raw, raw_len, &peer) != NA_SUCCESS) {
        atomic_fetch_add(&cls->n_bad_ctrl, 1);
        HGX_LOG_ERROR(OFI, "dropped an RMA check with a bad sender address (%lu so far)",
                      atomic_load(&cls->n_bad_ctrl));
        return;
    }
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    for (size_t i = 0; i < msg->nranges && status == NA_SUCCESS; i++) {
        hgx_ofi_ctrl_range(msg, i, &r);
        keys[i] = r.key;
        status = hgx_ofi_keytab_check(&cls->keys, r.key, r.addr, r.len, msg->access);
    }
    if (status == NA_SUCCESS) {
        uint64_t now = hgx_clock_now_ns();
        lease_us = hgx_ofi_keytab_lease(&cls->keys, keys, msg->nranges, now);
        if (lease_us)
            atomic_store_explicit(&cls->lease_end_ns,
                                  now + (uint64_t)lease_us * HGX_NS_PER_US,
                                  memory_order_relaxed);
    }
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    if (status != NA_SUCCESS) {
        char who[128];
        atomic_fetch_add(&cls->n_check_refused, 1);
        ofi_raw_addr_format(cls, raw, raw_len, who, sizeof(who));
        HGX_LOG_WARNING(OFI,
                        "refused a %s of %llu bytes at 0x%llx from %s: %s (%lu refused)",
                        msg->access & HGX_OFI_CHECK_WRITE ? "put" : "get",
                        (unsigned long long)r.len, (unsigned long long)r.addr, who,
                        ofi_check_refusal(status), atomic_load(&cls->n_check_refused));
    }
    ssize_t rc =
        ofi_ctrl_send(cls, peer, false, 0, answer,
                      hgx_ofi_answer_encode(answer, msg->cookie, status, lease_us));
    if (rc != 0)
        HGX_LOG_ERROR(OFI, "answering an RMA check failed: %s", fi_strerror((int)-rc));
    ofi_peer_put(cls, peer);
}

/* The next remote ranges of a put/get, at most HGX_OFI_CHECK_MAX_RANGES:
 * one per remote segment, its runs merged. */
static size_t ofi_check_ranges(struct na_seg_cursor *cur, struct hgx_ofi_range *ranges)
{
    size_t n = 0, last = SIZE_MAX;
    struct na_seg_cursor before = *cur;
    struct na_seg_run run;

    while (na_seg_cursor_next(cur, &run)) {
        if (run.remote_index == last) {
            ranges[n - 1].len += run.len;
        } else if (n == HGX_OFI_CHECK_MAX_RANGES) {
            *cur = before; /* the run starts the next CHECK */
            break;
        } else {
            const struct ofi_seg *rs = ofi_seg_at(&cur->remote, run.remote_index);
            ranges[n++] =
                (struct hgx_ofi_range){rs->key, rs->addr + run.remote_offset, run.len};
            last = run.remote_index;
        }
        before = *cur;
    }
    return n;
}

static unsigned int ofi_check_access(const struct ofi_op *oop)
{
    return oop->kind == OFI_OP_PUT ? HGX_OFI_CHECK_WRITE : HGX_OFI_CHECK_READ;
}

/* Origin: a put/get whose remote ranges fit one CHECK, and those ranges. */
static bool ofi_check_one(const struct ofi_op *oop, struct hgx_ofi_range *ranges,
                          size_t *n)
{
    struct na_seg_cursor cur = oop->cur;
    *n = ofi_check_ranges(&cur, ranges);
    return cur.left == 0;
}

/* Origin, under ctrl_lock: keep the lease an answer granted to a claimed op
 * (one CHECK: a lease names every range of it), counted from when the
 * CHECK left, before the target started it. */
static void ofi_check_lease_keep_locked(struct ofi_class *cls, const struct ofi_op *oop,
                                        uint32_t lease_us)
{
    struct hgx_ofi_range ranges[HGX_OFI_CHECK_MAX_RANGES];
    size_t n;

    if (lease_us == 0 || !ofi_check_one(oop, ranges, &n))
        return;
    uint64_t until = oop->check_start_ns + (uint64_t)lease_us * HGX_NS_PER_US;
    for (size_t i = 0; i < n; i++)
        hgx_ofi_leases_add(&cls->leases, oop->peer->raw, oop->peer->len, &ranges[i],
                           ofi_check_access(oop), until);
}

/* Origin: whether leases the target granted cover every remote range of a
 * put/get now, so that it may go without a CHECK. */
bool ofi_check_leased(struct ofi_class *cls, struct ofi_op *oop)
{
    struct hgx_ofi_range ranges[HGX_OFI_CHECK_MAX_RANGES];
    size_t n;

    if (!ofi_check_one(oop, ranges, &n))
        return false;
    uint64_t now = hgx_clock_now_ns();
    bool covered = true;
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    for (size_t i = 0; i < n && covered; i++)
        covered = hgx_ofi_leases_cover(&cls->leases, oop->peer->raw, oop->peer->len,
                                       &ranges[i], ofi_check_access(oop), now);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    return covered;
}

/* A claimed op: post it if the target agreed, else end it. */
static void ofi_check_done(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret)
{
    if (ret == NA_SUCCESS && !na_op_cancel_requested(na_op_from_plugin(oop))) {
        ofi_submit(cls, oop, true);
        return;
    }
    if (ret != NA_SUCCESS && ret != NA_CANCELED) {
        char why[96];
        snprintf(why, sizeof(why), "refused by the target: %s", ofi_check_refusal(ret));
        ofi_log_post_error(cls, oop, why);
    }
    ofi_op_finish(cls, oop, ret == NA_SUCCESS ? NA_CANCELED : ret);
}

static void ofi_ctrl_answer(struct ofi_class *cls, const struct hgx_ofi_ctrl *msg)
{
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    struct ofi_op *oop = na_slots_get_cookie(&cls->cookies, msg->cookie);
    bool claimed = oop && (msg->status != NA_SUCCESS || --oop->checks_left == 0);
    if (claimed) {
        ofi_check_claim_locked(cls, oop);
        if (msg->status == NA_SUCCESS)
            ofi_check_lease_keep_locked(cls, oop, msg->lease_us);
    }
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    if (!oop) {
        atomic_fetch_add(&cls->n_stale_answers, 1);
        HGX_LOG_DEBUG(OFI, "dropped an RMA check answer for no waiting operation");
    } else if (claimed) {
        ofi_check_done(cls, oop, msg->status);
    }
}

/* A control receive completed: handle the message, then post it again. */
void ofi_ctrl_received(struct ofi_class *cls, struct ofi_ctrl_rx *rx, na_return_t ret,
                       size_t len)
{
    struct hgx_ofi_ctrl msg;

    if (ret != NA_SUCCESS || !hgx_ofi_ctrl_decode(rx->buf, len, OFI_HDR_SIZE, &msg)) {
        atomic_fetch_add(&cls->n_bad_ctrl, 1);
        HGX_LOG_ERROR(OFI,
                      "dropped a malformed control message of %zu bytes (%lu so far)",
                      len, atomic_load(&cls->n_bad_ctrl));
    } else if (msg.type == HGX_OFI_CTRL_CHECK) {
        ofi_ctrl_check(cls, &msg);
    } else {
        ofi_ctrl_answer(cls, &msg);
    }
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    ofi_ctrl_post_locked(cls, rx);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
}

/* Origin: ask the target to judge every remote range of a put/get (at most
 * HGX_OFI_CHECK_MAX_RANGES per CHECK); ofi_ctrl_answer posts it once all
 * answers agreed. Once the first CHECK is out an answer may end the op on
 * another thread, so the op is read only through its cookie after that.
 * Returns the error of a first CHECK that could not go out (NA_AGAIN for a
 * refusal under NA_NO_RETRY): the op is released then, as for a refused
 * post. */
na_return_t ofi_check_start(struct ofi_class *cls, struct ofi_op *oop)
{
    unsigned char buf[sizeof(cls->ctrl_rx->buf)];
    struct hgx_ofi_range ranges[HGX_OFI_CHECK_MAX_RANGES];
    struct na_seg_cursor cur = oop->cur;
    struct ofi_peer *peer = oop->peer;
    unsigned int access = ofi_check_access(oop);
    na_return_t ret = NA_SUCCESS;
    size_t tries = 0;
    ssize_t rc = 0;

    oop->checks_left = 0;
    for (struct na_seg_cursor c = cur; c.left > 0; oop->checks_left++)
        ofi_check_ranges(&c, ranges);
    oop->check_start_ns = hgx_clock_now_ns();
    oop->check_deadline_ms = oop->check_start_ns / HGX_NS_PER_MS + OFI_CHECK_TIMEOUT_MS;
    atomic_store_explicit(&cls->check_sent_ns, oop->check_start_ns, memory_order_relaxed);
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    uint32_t index, gen;
    bool ok = na_slots_add(&cls->cookies, oop, &index, &gen);
    if (ok) {
        oop->cookie = na_slots_cookie(index, gen);
        oop->checking = true;
        oop->check_reach = false;
        ofi_list_push(&cls->checking, &oop->check_link);
    }
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    if (!ok) {
        ofi_log_post_error(cls, oop, "out of memory for its RMA check");
        ofi_op_release(cls, oop);
        return NA_NOMEM;
    }
    uint64_t cookie = oop->cookie;
    ofi_peer_ref(cls, peer); /* the op may end before we are done */
    for (; rc == 0 && cur.left > 0; tries++) {
        size_t n = ofi_check_ranges(&cur, ranges);
        rc = ofi_ctrl_send(
            cls, peer, true, cookie, buf,
            hgx_ofi_check_encode(buf, cookie, access, cls->hdr, OFI_HDR_SIZE, ranges, n));
    }
    if (rc != 0 && ofi_check_claim(cls, cookie)) {
        if (rc == -FI_EAGAIN)
            HGX_LOG_DEBUG(OFI, "refused RMA check not retried (NA_NO_RETRY)");
        else
            ofi_log_post_error(cls, oop, fi_strerror((int)-rc));
        ret = ofi_na_error((int)-rc);
        /* The first CHECK failed: nothing went out, the error is the
         * caller's. Later ones: answers may come, the op ends with it. */
        if (tries == 1) {
            ofi_op_release(cls, oop);
        } else {
            ofi_op_finish(cls, oop, ret);
            ret = NA_SUCCESS;
        }
    }
    ofi_peer_put(cls, peer);
    return ret;
}

/* Origin: an op still waiting cancels at once; its late answer matches no
 * cookie then. */
bool ofi_check_cancel(struct ofi_class *cls, struct ofi_op *oop)
{
    if (!cls->proto->rma_unchecked || !ofi_op_is_rma(oop))
        return false;
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    bool claimed = oop->checking;
    if (claimed)
        ofi_check_claim_locked(cls, oop);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    return claimed;
}

/* Origin, under ctrl_lock: whether the peer of an op whose answer is late
 * is found gone (ofi_reach.c), the op holding the peer's look from then on. */
static bool ofi_check_peer_gone_locked(struct ofi_class *cls, struct ofi_op *oop,
                                       uint64_t now_ms)
{
    ofi_mutex_lock(cls, &cls->lock);
    if (!oop->check_reach)
        ofi_reach_hold_locked(cls, oop->peer, now_ms);
    oop->check_reach = true;
    bool gone = ofi_reach_check_locked(cls, oop->peer, now_ms) != 0;
    ofi_mutex_unlock(cls, &cls->lock);
    return gone;
}

/* Origin: ops whose target did not answer in time end as unreachable, and
 * so do those whose target is found gone once their answer is
 * OFI_REACH_POLL_MS late (a target killed with its region left behind
 * took the CHECK). The peers are looked at every OFI_REACH_POLL_MS. */
static void ofi_check_expire(struct ofi_class *cls)
{
    struct hgx_list expired, gone, *link, *next;

    if (atomic_load(&cls->checking.count) == 0)
        return;
    uint64_t now = hgx_clock_now_ms();
    hgx_list_init(&expired);
    hgx_list_init(&gone);
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    bool look = now >= cls->check_reach_ms;
    if (look)
        cls->check_reach_ms = now + OFI_REACH_POLL_MS;
    /* First deadline first is oldest CHECK first. */
    hgx_list_for_each_safe(link, next, &cls->checking.head)
    {
        struct ofi_op *oop = hgx_list_entry(link, struct ofi_op, check_link);
        struct hgx_list *to;
        if (oop->check_deadline_ms <= now)
            to = &expired;
        else if (!look || oop->check_start_ns / HGX_NS_PER_MS + OFI_REACH_POLL_MS > now)
            break;
        else if (ofi_check_peer_gone_locked(cls, oop, now))
            to = &gone;
        else
            continue;
        ofi_check_claim_locked(cls, oop);
        hgx_list_push_back(to, link);
    }
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    while ((link = hgx_list_pop_front(&expired))) {
        struct ofi_op *oop = hgx_list_entry(link, struct ofi_op, check_link);
        char why[64];
        snprintf(why, sizeof(why), "no answer to its RMA check in %d ms",
                 OFI_CHECK_TIMEOUT_MS);
        ofi_log_post_error(cls, oop, why);
        ofi_op_finish(cls, oop, NA_HOSTUNREACH);
    }
    /* ofi_reach_check_locked said why, once for the peer. */
    while ((link = hgx_list_pop_front(&gone)))
        ofi_op_finish(cls, hgx_list_entry(link, struct ofi_op, check_link),
                      NA_HOSTUNREACH);
}

/* Progress of the check: receives to post again, refused sends, deadlines. */
void ofi_ctrl_progress(struct ofi_class *cls)
{
    if (!cls->proto->rma_unchecked)
        return;
    ofi_ctrl_repost(cls);
    ofi_ctrl_flush(cls);
    ofi_check_expire(cls);
}

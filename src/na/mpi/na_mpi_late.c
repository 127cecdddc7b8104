/*
 * na_mpi_late.c -- the MPI NA plugin: expected messages that arrive after
 * their receive was cancelled (a response to a forward that timed out).
 * The plugin as a whole: na_mpi_priv.h.
 *
 * Such a message matches no NA receive: the claim (nm_claim_any) would hold
 * it for a receive that never comes, one per late response for the life of
 * the class, and once HGX_NA_UNEXPECTED_MAX are held every pass falls back to
 * per-kind probes. So the (source, tag, communicator) of each cancelled
 * expected receive is remembered, in a table of NM_LATE_SLOTS indexed by the
 * tag (HG's tags are consecutive: a burst of that many timeouts is
 * remembered whole; one whose slot another takes is forgotten), and a
 * message claimed with one is received and dropped. A receive posted again
 * with a remembered triple forgets it, so its message goes to that receive.
 */
#include "na_mpi_priv.h"

static struct nm_late *nm_late_slot(struct nm_class *pc, int tag)
{
    return &pc->late[(unsigned)tag % NM_LATE_SLOTS];
}

static bool nm_late_match(const struct nm_late *l, int src, int tag, MPI_Comm comm)
{
    return l->set && l->src == src && l->tag == tag && l->comm == comm;
}

/* A receive of tag from src on comm was cancelled: its message may still
 * come. Lock held. */
void nm_late_expect(struct nm_class *pc, int src, int tag, MPI_Comm comm)
{
    struct nm_late *l = nm_late_slot(pc, tag);
    if (!l->set)
        pc->late_live++;
    *l = (struct nm_late){.src = src, .tag = tag, .comm = comm, .set = true};
}

/* A receive of tag from src on comm is posted: its message is wanted. Lock
 * held. */
void nm_late_forget(struct nm_class *pc, int src, int tag, MPI_Comm comm)
{
    struct nm_late *l = nm_late_slot(pc, tag);
    if (nm_late_match(l, src, tag, comm)) {
        l->set = false;
        pc->late_live--;
    }
}

/* Whether a message of st's source and tag on comm is a late one. Lock held. */
bool nm_late_is(struct nm_class *pc, const MPI_Status *st, MPI_Comm comm)
{
    return pc->late_live > 0 && nm_late_match(nm_late_slot(pc, st->MPI_TAG),
                                              st->MPI_SOURCE, st->MPI_TAG, comm);
}

/* Receive and drop claimed message msg, a late one (nm_late_is). Lock held. */
void nm_late_drop(struct nm_class *pc, MPI_Message *msg, const MPI_Status *st,
                  MPI_Comm comm)
{
    nm_late_forget(pc, st->MPI_SOURCE, st->MPI_TAG, comm);
    HGX_LOG_DEBUG(MPI,
                  "dropped an expected message (tag %d) from rank %d that came after "
                  "its receive was cancelled",
                  st->MPI_TAG, st->MPI_SOURCE);
    hgx_mpi_mrecv_drop(msg, st);
    pc->late_dropped++;
}

unsigned long na_mpi_late_dropped(na_class_t *na_class)
{
    struct nm_class *pc = PC(na_class);
    hgx_lock(&pc->lock);
    unsigned long n = pc->late_dropped;
    hgx_unlock(&pc->lock);
    return n;
}

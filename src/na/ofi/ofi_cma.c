/*
 * ofi_cma.c -- whether shm can move a message above its inject size by CMA.
 *
 * libfabric's shm sends a message above its inject size by cross-memory
 * attach (process_vm_readv/writev between the two processes) when the
 * kernel lets it, else by its SAR protocol through bounce buffers. On
 * libfabric 1.17, SAR messages that wait in a receiver's unexpected queue
 * while both peers send stall (sends refused until they fail), so a class
 * sends messages above the inject size only when CMA will carry them.
 *
 * shm decides per peer; a class must fix its message size before it knows
 * any peer, so this checks what would stop CMA towards a process of the same
 * user: the FI_SHM_DISABLE_CMA switch, a seccomp filter that refuses the
 * call (tried on this process), and Yama's ptrace scope, which above 0
 * forbids reading a process that is not a descendant unless this one has
 * CAP_SYS_PTRACE.
 */
#include "ofi_int.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <unistd.h>

#define CAP_SYS_PTRACE_BIT 19

/* libfabric's boolean spellings; unset or unknown means false. */
static bool env_true(const char *name)
{
    const char *v = getenv(name);
    return v && (!strcmp(v, "1") || !strcasecmp(v, "on") || !strcasecmp(v, "true") ||
                 !strcasecmp(v, "yes"));
}

/* Yama's kernel.yama.ptrace_scope; 0 when Yama is not there. */
static long yama_ptrace_scope(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    long scope = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%ld", &scope) != 1)
        scope = 1; /* unreadable: assume restricted */
    fclose(f);
    return scope;
}

/* Whether the effective capabilities hold CAP_SYS_PTRACE. */
static bool has_cap_sys_ptrace(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    bool cap = false;
    if (!f)
        return false;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long eff;
        if (sscanf(line, "CapEff: %llx", &eff) == 1) {
            cap = (eff >> CAP_SYS_PTRACE_BIT) & 1u;
            break;
        }
    }
    fclose(f);
    return cap;
}

bool ofi_shm_cma_usable(void)
{
    if (env_true("FI_SHM_DISABLE_CMA"))
        return false;
    char src = 'x', dst = 0;
    struct iovec local = {.iov_base = &dst, .iov_len = 1};
    struct iovec remote = {.iov_base = &src, .iov_len = 1};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != 1 || dst != src)
        return false;
    long scope = yama_ptrace_scope();
    return scope == 0 || (scope == 1 && has_cap_sys_ptrace());
}

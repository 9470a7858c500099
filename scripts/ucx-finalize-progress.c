// SPDX-License-Identifier: BSD-3-Clause
// Preloaded into the ranks by scripts/cluster-mpiexec.sh (LD_PRELOAD): keeps UCX progressing
// while MPICH's MPI_Finalize waits in the process manager's barrier.
//
// Why: MPICH 4.0's ch4:ucx finalize closes every endpoint in flush mode, waits for the
// closes, then calls the PMI barrier, then destroys the UCX worker. Over UCX's TCP
// transport (1.13) a flush is a remote operation: every active message sets a "needs
// flush" flag on the endpoint, and flushing it sends an empty PUT whose ACK the peer
// sends from its own progress; sending that ACK sets the flag on the peer's endpoint in
// turn. So a rank that closes its endpoints late (it was descheduled, or still in the
// barrier before MPI_Finalize when an earlier rank's flush reached it and it answered)
// waits for the ACK of a peer that has already finished its closes and sits in the PMI
// barrier, where nothing progresses UCX: both wait forever. Later MPICH releases dropped
// that PMI barrier; Debian 12's MPICH 4.0.2 has it.
//
// What: from the first ucp_disconnect_nb (MPICH calls it only in MPI_Finalize) until the
// worker is destroyed, a blocking read() by the thread that closed the endpoints (the PMI
// barrier's read of its reply) progresses the UCX workers while it waits for the reply
// to arrive. Nothing else changes: the endpoints are still closed in flush mode, and
// before MPI_Finalize the library only forwards the calls it wraps.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

enum { max_workers = 64 };
static ucp_worker_h workers[max_workers];
static int n_workers;
static int closing;          // set by the first ucp_disconnect_nb, cleared when no worker is left
static pthread_t closer;     // the thread that closed the endpoints (MPI_Finalize's)

#define REAL(name) \
  static __typeof__(&name) real_##name; \
  if (!real_##name) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

ucs_status_t ucp_worker_create(ucp_context_h context, const ucp_worker_params_t *params,
                               ucp_worker_h *worker_p) {
  REAL(ucp_worker_create);
  ucs_status_t status = real_ucp_worker_create(context, params, worker_p);
  if (status == UCS_OK && n_workers < max_workers) workers[n_workers++] = *worker_p;
  return status;
}

void ucp_worker_destroy(ucp_worker_h worker) {
  REAL(ucp_worker_destroy);
  for (int i = 0; i < n_workers; ++i)
    if (workers[i] == worker) {
      workers[i] = workers[--n_workers];
      break;
    }
  if (n_workers == 0) closing = 0;
  real_ucp_worker_destroy(worker);
}

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep) {
  REAL(ucp_disconnect_nb);
  if (!closing) {
    closer = pthread_self();
    closing = 1;
  }
  return real_ucp_disconnect_nb(ep);
}

ssize_t read(int fd, void *buf, size_t count) {
  REAL(read);
  REAL(ucp_worker_progress);
  if (closing && n_workers > 0 && pthread_equal(pthread_self(), closer) &&
      !(fcntl(fd, F_GETFL) & O_NONBLOCK)) {
    // A read that would block: wait for fd to become readable (or to fail: read then
    // reports it), answering the peers' flushes meanwhile; 1 ms between checks keeps
    // the wait from spinning.
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (;;) {
      for (int i = 0; i < n_workers; ++i)
        while (real_ucp_worker_progress(workers[i]) != 0) {
        }
      int r = poll(&p, 1, 1);
      if (r > 0 || (r < 0 && errno != EINTR)) break;
    }
  }
  return real_read(fd, buf, count);
}

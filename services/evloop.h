/* evloop.h - a small single-threaded epoll event loop (in the spirit of Redis's ae).
 *
 * dlrt's services (the Horovod rendezvous driver, the Caffe2 helper store, the
 * inference coordinator) each run one loop: file events for sockets, and
 * timers for idle timeouts, heartbeats and, for the services a step starts,
 * the step's lifetime (services/service.h). Nothing in a callback may block;
 * every wait is a timer.
 */
#ifndef DLRT_EVLOOP_H
#define DLRT_EVLOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/clock.h" /* dlrt_now_ms(), the timers' clock */

#define DLRT_EV_READ  1u
#define DLRT_EV_WRITE 2u

struct dlrt_evloop;

/* `events` holds DLRT_EV_READ/DLRT_EV_WRITE; error and hang-up count as readable. */
typedef void (*dlrt_ev_fd_fn)(struct dlrt_evloop *loop, int fd, unsigned events, void *arg);
/* Returns the delay in ms until it should run again, or -1 to be removed. */
typedef int64_t (*dlrt_ev_timer_fn)(struct dlrt_evloop *loop, void *arg);

struct dlrt_evloop *dlrt_evloop_create(void);
void dlrt_evloop_destroy(struct dlrt_evloop *loop);

int dlrt_evloop_add_fd(struct dlrt_evloop *loop, int fd, unsigned events,
		       dlrt_ev_fd_fn fn, void *arg);
int dlrt_evloop_set_events(struct dlrt_evloop *loop, int fd, unsigned events);
void dlrt_evloop_del_fd(struct dlrt_evloop *loop, int fd);
/* Forgets fd and closes it: closing the last reference drops it from the
 * epoll set, one syscall instead of two (only for fds never dup()ed or
 * inherited by a child). */
void dlrt_evloop_close_fd(struct dlrt_evloop *loop, int fd);

/* Returns a timer id (> 0) or -1. */
int64_t dlrt_evloop_add_timer(struct dlrt_evloop *loop, int64_t delay_ms,
			      dlrt_ev_timer_fn fn, void *arg);
void dlrt_evloop_del_timer(struct dlrt_evloop *loop, int64_t id);

/* Runs until dlrt_evloop_stop(); returns 0, or -1 if epoll itself failed. */
int dlrt_evloop_run(struct dlrt_evloop *loop);
void dlrt_evloop_stop(struct dlrt_evloop *loop);
/* How many waits began by asking again without sleeping (evloop.c, SPIN_US):
 * never while events come further apart than that. */
uint64_t dlrt_evloop_spins(const struct dlrt_evloop *loop);
/* Turns that spin off (or on again): a server whose many peers keep it busy
 * (the dlrt-infer coordinator) gains nothing from asking again before it
 * sleeps, and each empty ask is two system calls (epoll_wait, sched_yield). */
void dlrt_evloop_set_spin(struct dlrt_evloop *loop, bool on);

#endif

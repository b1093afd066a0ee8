#include "evloop.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

struct fd_slot {
	dlrt_ev_fd_fn fn;
	void *arg;
	unsigned events;
	bool used;
};

struct timer {
	int64_t id;
	int64_t when_ms;
	dlrt_ev_timer_fn fn;
	void *arg;
};

struct dlrt_evloop {
	int epfd;
	struct fd_slot *slots; /* indexed by fd */
	int nslots;
	struct timer *timers;  /* unsorted: services keep only a handful */
	int ntimers, timers_cap;
	int64_t next_timer_id;
	bool stop;
	int64_t last_idle_us; /* how long the last wait took to bring events */
	uint64_t spins;       /* waits that began with a spin (tests read it) */
	bool no_spin;         /* dlrt_evloop_set_spin(false) */
};

/* How long the loop asks again before it sleeps, when events have been
 * coming closer together than this. A client whose request finds the server
 * asleep pays for waking it (on a VM an interrupt to the other CPU, inside the
 * client's send), and a server that answers quickly is asleep more often:
 * measured with redis-benchmark at one request per connection, dlrt-store
 * slept 0.14 times per request against redis-server's 0.06-0.10 and was
 * 0.90-0.99x its speed although it spent less CPU per request. The spin is
 * bounded and only follows a short idle time, so a quiet service still sleeps
 * at once, and one whose requests come further apart than this never spins
 * (bench/RESULTS.md, "Caffe2 helper store"). */
#define SPIN_US 100

struct dlrt_evloop *dlrt_evloop_create(void)
{
	struct dlrt_evloop *loop = calloc(1, sizeof(*loop));

	if (!loop)
		return NULL;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		free(loop);
		return NULL;
	}
	loop->last_idle_us = INT64_MAX; /* a new loop has not been busy */
	return loop;
}

void dlrt_evloop_destroy(struct dlrt_evloop *loop)
{
	if (!loop)
		return;
	close(loop->epfd);
	free(loop->slots);
	free(loop->timers);
	free(loop);
}

static uint32_t to_epoll(unsigned events)
{
	return ((events & DLRT_EV_READ) ? EPOLLIN : 0) |
	       ((events & DLRT_EV_WRITE) ? EPOLLOUT : 0);
}

int dlrt_evloop_add_fd(struct dlrt_evloop *loop, int fd, unsigned events,
		       dlrt_ev_fd_fn fn, void *arg)
{
	struct epoll_event ev = { .events = to_epoll(events), .data.fd = fd };

	if (fd < 0)
		return -1;
	if (fd >= loop->nslots) {
		int n = loop->nslots ? loop->nslots : 64;
		struct fd_slot *p;

		while (n <= fd)
			n *= 2;
		p = realloc(loop->slots, (size_t)n * sizeof(*p));
		if (!p)
			return -1;
		memset(p + loop->nslots, 0, (size_t)(n - loop->nslots) * sizeof(*p));
		loop->slots = p;
		loop->nslots = n;
	}
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -1;
	loop->slots[fd] = (struct fd_slot){ fn, arg, events, true };
	return 0;
}

int dlrt_evloop_set_events(struct dlrt_evloop *loop, int fd, unsigned events)
{
	struct epoll_event ev = { .events = to_epoll(events), .data.fd = fd };

	if (fd < 0 || fd >= loop->nslots || !loop->slots[fd].used)
		return -1;
	if (loop->slots[fd].events == events)
		return 0;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -1;
	loop->slots[fd].events = events;
	return 0;
}

void dlrt_evloop_del_fd(struct dlrt_evloop *loop, int fd)
{
	if (fd < 0 || fd >= loop->nslots || !loop->slots[fd].used)
		return;
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
	loop->slots[fd].used = false;
}

void dlrt_evloop_close_fd(struct dlrt_evloop *loop, int fd)
{
	if (fd >= 0 && fd < loop->nslots)
		loop->slots[fd].used = false;
	close(fd);
}

int64_t dlrt_evloop_add_timer(struct dlrt_evloop *loop, int64_t delay_ms,
			      dlrt_ev_timer_fn fn, void *arg)
{
	if (loop->ntimers == loop->timers_cap) {
		int cap = loop->timers_cap ? loop->timers_cap * 2 : 8;
		struct timer *p = realloc(loop->timers, (size_t)cap * sizeof(*p));

		if (!p)
			return -1;
		loop->timers = p;
		loop->timers_cap = cap;
	}
	loop->timers[loop->ntimers++] = (struct timer){
		++loop->next_timer_id, dlrt_now_ms() + delay_ms, fn, arg
	};
	return loop->next_timer_id;
}

void dlrt_evloop_del_timer(struct dlrt_evloop *loop, int64_t id)
{
	for (int i = 0; i < loop->ntimers; i++) {
		if (loop->timers[i].id == id) {
			loop->timers[i] = loop->timers[--loop->ntimers];
			return;
		}
	}
}

void dlrt_evloop_set_spin(struct dlrt_evloop *loop, bool on)
{
	loop->no_spin = !on;
}

uint64_t dlrt_evloop_spins(const struct dlrt_evloop *loop)
{
	return loop->spins;
}

void dlrt_evloop_stop(struct dlrt_evloop *loop)
{
	loop->stop = true;
}

static int next_timeout_ms(const struct dlrt_evloop *loop, int64_t now)
{
	int64_t best = -1;

	for (int i = 0; i < loop->ntimers; i++) {
		int64_t d = loop->timers[i].when_ms - now;

		if (d < 0)
			d = 0;
		if (best < 0 || d < best)
			best = d;
	}
	return best > 60000 ? 60000 : (int)best;
}

/* Runs every due timer once. A callback may add or delete timers, so look
 * each one up again by id instead of holding a pointer. */
static void run_due_timers(struct dlrt_evloop *loop)
{
	int64_t now = dlrt_now_ms();
	int64_t due[64];
	int ndue = 0;

	for (int i = 0; i < loop->ntimers && ndue < 64; i++)
		if (loop->timers[i].when_ms <= now)
			due[ndue++] = loop->timers[i].id;
	for (int k = 0; k < ndue; k++) {
		for (int i = 0; i < loop->ntimers; i++) {
			struct timer t = loop->timers[i];
			int64_t again;

			if (t.id != due[k])
				continue;
			again = t.fn(loop, t.arg);
			/* The callback may have moved timers around: find it again. */
			for (int j = 0; j < loop->ntimers; j++) {
				if (loop->timers[j].id != t.id)
					continue;
				if (again < 0)
					loop->timers[j] = loop->timers[--loop->ntimers];
				else
					loop->timers[j].when_ms = dlrt_now_ms() + again;
				break;
			}
			break;
		}
	}
}

/* Waits for events like epoll_wait with the timers' timeout, first spinning
 * up to SPIN_US when the previous wait brought events within that time and no
 * timer is due; a timer is late by at most SPIN_US. A wait that ended without
 * events (a timer's turn, a signal) says nothing about the next request, so
 * it never leads to a spin. */
static int wait_events(struct dlrt_evloop *loop, struct epoll_event *evs, int max)
{
	int64_t start = dlrt_now_us();
	int timeout_ms = next_timeout_ms(loop, start / 1000);
	int n = 0;

	if (timeout_ms != 0 && !loop->no_spin && loop->last_idle_us <= SPIN_US) {
		loop->spins++;
		while ((n = epoll_wait(loop->epfd, evs, max, 0)) == 0 &&
		       dlrt_now_us() - start < SPIN_US)
			sched_yield(); /* a process on this CPU (the store behind a relay) goes first */
	}
	if (n == 0)
		n = epoll_wait(loop->epfd, evs, max, timeout_ms);
	loop->last_idle_us = n > 0 ? dlrt_now_us() - start : INT64_MAX;
	return n;
}

int dlrt_evloop_run(struct dlrt_evloop *loop)
{
	struct epoll_event evs[64];

	loop->stop = false;
	while (!loop->stop) {
		int n = wait_events(loop, evs, 64);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		for (int i = 0; i < n && !loop->stop; i++) {
			int fd = evs[i].data.fd;
			unsigned events = 0;

			if (fd >= loop->nslots || !loop->slots[fd].used)
				continue; /* closed by an earlier callback in this batch */
			if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
				events |= DLRT_EV_READ;
			if (evs[i].events & EPOLLOUT)
				events |= DLRT_EV_WRITE;
			loop->slots[fd].fn(loop, fd, events, loop->slots[fd].arg);
		}
		run_due_timers(loop);
	}
	return 0;
}

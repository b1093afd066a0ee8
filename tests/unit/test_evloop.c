/* test_evloop.c - services/evloop.c: timers and file events in one loop, and its
 * spin before sleeping: a quiet loop (events further apart than the spin's
 * bound) never spins, a loop whose events follow each other does, unless
 * its spin is turned off (dlrt_evloop_set_spin). */
#include <fcntl.h>
#include <unistd.h>

#include "services/evloop.h"
#include "tap.h"

struct ticks {
	int left;
};

/* A timer that runs `left` times, 2 ms apart, then stops the loop. */
static int64_t tick(struct dlrt_evloop *loop, void *arg)
{
	struct ticks *t = arg;

	if (--t->left > 0)
		return 2;
	dlrt_evloop_stop(loop);
	return -1;
}

static void test_quiet_loop_sleeps(void)
{
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct ticks t = { .left = 20 };
	int64_t start = dlrt_now_ms();

	TAP_OK(loop != NULL, "loop created");
	TAP_OK(dlrt_evloop_add_timer(loop, 2, tick, &t) > 0, "timer added");
	TAP_IS_INT(dlrt_evloop_run(loop), 0, "loop ran");
	TAP_IS_INT(t.left, 0, "the timer ran 20 times");
	TAP_OK(dlrt_now_ms() - start >= 38, "at 2 ms intervals");
	TAP_IS_INT((int)dlrt_evloop_spins(loop), 0, "a loop whose events are 2 ms apart never spins");
	dlrt_evloop_destroy(loop);
}

struct pingpong {
	int rd, wr;
	int left;
};

/* Reads the byte and writes the next one: the pipe is readable again at
 * once, as a socket is under a stream of requests. */
static void pong(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct pingpong *p = arg;
	char c;

	(void)events;
	if (read(fd, &c, 1) != 1 || --p->left == 0 || write(p->wr, "x", 1) != 1)
		dlrt_evloop_stop(loop);
}

static void test_busy_loop_spins(bool spin)
{
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct pingpong p = { .left = 1000 };
	int fds[2];

	TAP_OK(loop != NULL && pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0, "loop and pipe");
	if (!spin)
		dlrt_evloop_set_spin(loop, false);
	p.rd = fds[0];
	p.wr = fds[1];
	TAP_IS_INT(dlrt_evloop_add_fd(loop, p.rd, DLRT_EV_READ, pong, &p), 0, "pipe added");
	TAP_IS_INT((int)write(p.wr, "x", 1), 1, "first byte");
	TAP_IS_INT(dlrt_evloop_run(loop), 0, "loop ran");
	TAP_IS_INT(p.left, 0, "1000 events handled");
	/* Each wait after the first follows one that found the byte at once;
	 * only a thread preempted inside every one of them would not spin. */
	if (spin)
		TAP_OK(dlrt_evloop_spins(loop) > 0, "a loop whose events follow each other spins");
	else
		TAP_IS_INT((int)dlrt_evloop_spins(loop), 0, "unless its spin is turned off");
	dlrt_evloop_close_fd(loop, p.rd);
	close(p.wr);
	dlrt_evloop_destroy(loop);
}

int main(void)
{
	test_quiet_loop_sleeps();
	test_busy_loop_spins(true);
	test_busy_loop_spins(false);
	return tap_done();
}

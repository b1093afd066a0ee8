#include "hbsend.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "common/buf.h"
#include "inference/proto/proto.h"

#define SEND_TIMEOUT_MS 30000

struct dlrt_hbsend {
	int fd;
	int interval_ms;
	pthread_mutex_t *wlock;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	pthread_t th;
	uint8_t frame[DLRT_IP_HDR];
};

/* The whole frame: a half-sent heartbeat would corrupt the stream. A
 * coordinator that reads nothing for SEND_TIMEOUT_MS is given up: shutting the
 * socket down makes the worker's main thread reconnect. */
static void send_frame(struct dlrt_hbsend *h)
{
	size_t off = 0;

	pthread_mutex_lock(h->wlock);
	while (off < sizeof(h->frame)) {
		ssize_t n = send(h->fd, h->frame + off, sizeof(h->frame) - off, MSG_NOSIGNAL);
		struct pollfd p = { .fd = h->fd, .events = POLLOUT };

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
		    poll(&p, 1, SEND_TIMEOUT_MS) > 0)
			continue;
		shutdown(h->fd, SHUT_RDWR);
		break;
	}
	pthread_mutex_unlock(h->wlock);
}

static void *run(void *arg)
{
	struct dlrt_hbsend *h = arg;

	pthread_mutex_lock(&h->mu);
	while (!h->stop) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += h->interval_ms / 1000;
		ts.tv_nsec += (long)(h->interval_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_cond_timedwait(&h->cv, &h->mu, &ts) == ETIMEDOUT && !h->stop) {
			pthread_mutex_unlock(&h->mu);
			send_frame(h);
			pthread_mutex_lock(&h->mu);
		}
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

int dlrt_hbsend_start(struct dlrt_hbsend **out, int fd, int interval_ms, pthread_mutex_t *wlock)
{
	struct dlrt_hbsend *h;
	struct dlrt_buf b;

	*out = NULL;
	if (interval_ms <= 0)
		return 0;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -1;
	h->fd = fd;
	h->interval_ms = interval_ms;
	h->wlock = wlock;
	dlrt_buf_init(&b, 64);
	if (dlrt_ip_put_empty(&b, DLRT_IP_HEARTBEAT) < 0 || b.len != sizeof(h->frame)) {
		dlrt_buf_free(&b);
		free(h);
		return -1;
	}
	for (size_t i = 0; i < sizeof(h->frame); i++)
		h->frame[i] = dlrt_buf_head(&b)[i];
	dlrt_buf_free(&b);
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (pthread_create(&h->th, NULL, run, h) != 0) {
		pthread_mutex_destroy(&h->mu);
		pthread_cond_destroy(&h->cv);
		free(h);
		return -1;
	}
	*out = h;
	return 0;
}

void dlrt_hbsend_stop(struct dlrt_hbsend *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stop = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->th, NULL);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}

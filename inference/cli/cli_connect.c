/* cli_connect.c - how a dlrt-infer command reaches the pool's coordinator:
 * through its access record, after waiting (bounded, with one line saying
 * why) for the coordinator of a pool whose array Slurm has not started yet,
 * and again through a new record when the coordinator is lost and its
 * standby takes over, so that a request survives a failover.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/parse.h"
#include "cli.h"

#define RECONNECT_MS 30000 /* how long a client looks for a new coordinator */
#define SQUEUE_EVERY_MS 2000

static char client_dir[4096]; /* the pool of client_open(), for client_call()'s reconnects */

/* 1 when `dir` holds a pool submitted by pool start whose coordinator has not
 * served yet (its array record is newer than the access record), with *arr;
 * 0 when the access record is the one to use; -1 after printing why the
 * array record cannot be used. */
int pool_starting(const char *dir, struct dlrt_pool_array *arr)
{
	struct dlrt_pool_access a;
	struct dlrt_err err;
	int rc = dlrt_pool_array_read(dir, arr, &err);

	if (rc < 0)
		return die("%s", err.msg) ? -1 : -1;
	if (rc > 0)
		return 0;
	rc = dlrt_pool_read_access(dir, &a, &err);
	/* A broken access record is reported by whoever reads it next. */
	return rc == 0 && a.epoch > arr->after_epoch ? 0 : rc < 0 ? 0 : 1;
}

/* squeue's word on element 0 of the array, for the lines below: 0 while it
 * may still start (pending, configuring, running), 1 once it has ended. */
int array_state(const struct dlrt_pool_array *arr, char *why, size_t len)
{
	struct dlrt_pool_array_state st;
	struct dlrt_err err;
	int rc = dlrt_pool_array_query(arr, SLURM_CMD_MS, &st, &err);

	if (rc < 0) {
		snprintf(why, len, "in an unknown state (%.200s)", err.msg);
		return 0;
	}
	if (rc > 0 || (strcmp(st.state, "PENDING") && strcmp(st.state, "CONFIGURING") &&
		       strcmp(st.state, "RUNNING") && strcmp(st.state, "REQUEUED") &&
		       strcmp(st.state, "RESIZING") && strcmp(st.state, "SUSPENDED"))) {
		snprintf(why, len, "%s", rc > 0 ? "no longer in the queue" : st.state);
		return 1;
	}
	if (!strcmp(st.state, "PENDING"))
		snprintf(why, len, "still pending (Slurm's reason: %s)", st.reason);
	else
		snprintf(why, len, "%s; its coordinator is starting", st.state);
	return 0;
}

/* The seconds to wait for a coordinator: $DLRT_INFER_START_TIMEOUT or the
 * default; -1 after printing why the variable is wrong. */
static int start_timeout(void)
{
	const char *v = getenv("DLRT_INFER_START_TIMEOUT");
	uint32_t s = START_TIMEOUT_S;

	if (v && *v && dlrt_parse_u32(v, 1, 7 * 86400, &s) < 0)
		return die("DLRT_INFER_START_TIMEOUT=%s: expected seconds from 1 to %u", v,
			   7 * 86400) ? -1 : -1;
	return (int)s;
}

/* Waits, up to timeout_s, until the coordinator of the pool that pool start
 * submitted has written its access record; one progress line on stderr if
 * it has to wait at all. 0, or -1 after one line naming the cause (the array
 * still pending and Slurm's reason, or ended) and `fix`. */
int wait_coordinator(const char *dir, int timeout_s, const char *fix)
{
	int64_t give_up = dlrt_now_ms() + (int64_t)timeout_s * 1000, next_query = 0;
	struct dlrt_pool_array arr;
	char why[DLRT_ERR_MAX] = "";
	bool told = false;

	for (;;) {
		int rc = pool_starting(dir, &arr);

		if (rc <= 0)
			return rc;
		if (dlrt_now_ms() >= next_query) {
			if (array_state(&arr, why, sizeof(why)) == 1 && pool_starting(dir, &arr) == 1)
				return die("no coordinator serves %s: the pool's array job %u is %s "
					   "(element 0's log: %s/element-%u_0.log); start a pool with "
					   "dlrt-infer pool start", dir, arr.job, why, dir,
					   arr.job) ? -1 : -1;
			next_query = dlrt_now_ms() + SQUEUE_EVERY_MS;
			if (!told) {
				fprintf(stderr, "%s: waiting up to %d s for the coordinator of %s: "
					"array job %u is %s\n", prog, timeout_s, dir, arr.job, why);
				told = true;
			}
		}
		if (dlrt_now_ms() >= give_up)
			return die("no coordinator served %s within %d s: the pool's array job %u is "
				   "%s (squeue -j %u); %s", dir, timeout_s, arr.job, why, arr.job,
				   fix) ? -1 : -1;
		usleep(200000);
	}
}

/* Opens a client connection to the pool's coordinator. */
int client_open(struct dlrt_ipc *c, char *dir, size_t len)
{
	struct dlrt_err err;
	char name[64];
	int tmo;

	if (pool_dir(dir, len) < 0)
		return -1;
	snprintf(client_dir, sizeof(client_dir), "%s", dir);
	snprintf(name, sizeof(name), "client-%d", (int)getpid());
	/* Right after pool start the array may still be queued: its coordinator
	 * takes the jobs once it serves, so wait for it (bounded). */
	switch (pool_starting(dir, &(struct dlrt_pool_array){ 0 })) {
	case -1:
		return -1;
	case 1:
		tmo = start_timeout();
		if (tmo < 0 || wait_coordinator(dir, tmo, "wait longer with "
						"DLRT_INFER_START_TIMEOUT=SECONDS") < 0)
			return -1;
	}
	/* A coordinator that does not answer (killed, stopped, its node lost) may
	 * be replaced by its standby within seconds: read the record again and
	 * retry for RECONNECT_MS. A refusal, or no record at all, is final. */
	for (int64_t give_up = dlrt_now_ms() + RECONNECT_MS;;) {
		if (dlrt_ipc_open(c, dir, DLRT_IP_ROLE_CLIENT, name, 2000, &err) == 0)
			return 0;
		if ((!strstr(err.msg, "the coordinator at ") && !strstr(err.msg, "did not answer") &&
		     !strstr(err.msg, "closed the connection") &&
		     !strstr(err.msg, "lost the connection")) || dlrt_now_ms() > give_up)
			break;
		usleep(100000);
	}
	die("%s", err.msg);
	return -1;
}

/* Sends c->out and waits for one frame (-1 after printing the error; an
 * ERROR frame is printed too). When the coordinator is lost on the way (its
 * standby takes over), reconnects through the access record and sends the
 * request again, for up to RECONNECT_MS: every request is safe to repeat
 * (a SUBMIT carries its token). */
int client_call(struct dlrt_ipc *c, struct dlrt_ip_frame *f, int timeout_ms)
{
	struct dlrt_err err;
	struct dlrt_buf req;
	int64_t give_up = 0;
	char name[64];
	int rc = -1;

	dlrt_buf_init(&req, (size_t)-1);
	if (dlrt_buf_append(&req, dlrt_buf_head(&c->out), c->out.len) < 0)
		return die("out of memory") ? -1 : -1;
	snprintf(name, sizeof(name), "client-%d", (int)getpid());
	for (;;) {
		struct dlrt_err e2;

		if (c->fd >= 0 && dlrt_ipc_flush(c, CLIENT_TIMEOUT_MS, &err) == 0) {
			rc = dlrt_ipc_recv(c, f, timeout_ms, &err);
			if (rc == 0) {
				dlrt_buf_free(&req);
				return die("the coordinator did not answer within %d s",
					   timeout_ms / 1000) ? -1 : -1;
			}
			if (rc == 1)
				break;
		}
		if (!give_up)
			give_up = dlrt_now_ms() + RECONNECT_MS;
		dlrt_ipc_close(c);
		while (c->fd < 0 && dlrt_now_ms() < give_up) {
			usleep(100000);
			if (dlrt_ipc_open(c, client_dir, DLRT_IP_ROLE_CLIENT, name, 2000, &e2) < 0)
				c->fd = -1;
		}
		if (c->fd < 0 || dlrt_buf_append(&c->out, dlrt_buf_head(&req), req.len) < 0) {
			dlrt_buf_free(&req);
			return die("%s; no coordinator answered for %d s", err.msg,
				   RECONNECT_MS / 1000) ? -1 : -1;
		}
	}
	dlrt_buf_free(&req);
	if (f->type == DLRT_IP_ERROR) {
		struct dlrt_ip_text t;

		if (dlrt_ip_get_error(f->payload, f->len, &t, &err) < 0)
			return die("%s", err.msg) ? -1 : -1;
		return die("%s", t.text) ? -1 : -1;
	}
	return 0;
}


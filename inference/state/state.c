#include "state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dlrt_infer_state_init(struct dlrt_infer_state *s)
{
	memset(s, 0, sizeof(*s));
}

void dlrt_infer_state_free(struct dlrt_infer_state *s)
{
	for (uint32_t i = 0; i < s->njobs; i++) {
		dlrt_ip_submit_free(&s->jobs[i].sub);
		free(s->jobs[i].task_done);
	}
	free(s->jobs);
	memset(s, 0, sizeof(*s));
}

struct dlrt_infer_job *dlrt_infer_state_job(struct dlrt_infer_state *s, uint32_t id)
{
	return id >= 1 && id <= s->njobs ? &s->jobs[id - 1] : NULL;
}

uint32_t dlrt_infer_task_first(const struct dlrt_infer_job *j, uint64_t t)
{
	return (uint32_t)(t * j->sub.batch);
}

uint32_t dlrt_infer_task_size(const struct dlrt_infer_job *j, uint64_t t)
{
	uint64_t first = t * j->sub.batch;

	if (first >= j->sub.count)
		return 0;
	return j->sub.count - first < j->sub.batch ? (uint32_t)(j->sub.count - first)
						   : j->sub.batch;
}

static int apply_add(struct dlrt_infer_state *s, const struct dlrt_infer_change *c,
		     struct dlrt_err *err)
{
	struct dlrt_infer_job *j;
	uint32_t ntasks;

	if (c->job != s->njobs + 1)
		return dlrt_err_set(err, "change %llu adds job %u but the next id is %u",
				    (unsigned long long)c->seq, c->job, s->njobs + 1);
	if (c->sub.count == 0 || c->sub.batch == 0 ||
	    (c->sub.nlabels && c->sub.nlabels != c->sub.count))
		return dlrt_err_set(err, "change %llu adds a job with bad sizes",
				    (unsigned long long)c->seq);
	if (s->njobs == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 16;
		struct dlrt_infer_job *p = realloc(s->jobs, cap * sizeof(*p));

		if (!p)
			return dlrt_err_set(err, "out of memory adding a job");
		s->jobs = p;
		s->cap = cap;
	}
	ntasks = (c->sub.count + c->sub.batch - 1) / c->sub.batch;
	j = &s->jobs[s->njobs];
	memset(j, 0, sizeof(*j));
	j->task_done = calloc(ntasks, 1);
	if (!j->task_done)
		return dlrt_err_set(err, "out of memory adding a job");
	j->sub = c->sub;
	j->sub.labels = NULL;
	if (c->sub.nlabels) {
		j->sub.labels = malloc(c->sub.nlabels);
		if (!j->sub.labels) {
			free(j->task_done);
			return dlrt_err_set(err, "out of memory adding a job");
		}
		memcpy(j->sub.labels, c->sub.labels, c->sub.nlabels);
	}
	j->id = c->job;
	j->state = DLRT_IP_JOB_RUNNING;
	j->ntasks = ntasks;
	j->t_submit = c->wall;
	s->njobs++;
	return 0;
}

static int apply_task(struct dlrt_infer_job *j, const struct dlrt_infer_change *c,
		      struct dlrt_err *err)
{
	uint32_t first;

	if (c->task >= j->ntasks)
		return dlrt_err_set(err, "job %u has no task %llu", j->id,
				    (unsigned long long)c->task);
	if (j->task_done[c->task])
		return dlrt_err_set(err, "task %llu of job %u is already answered",
				    (unsigned long long)c->task, j->id);
	if (c->res.n != dlrt_infer_task_size(j, c->task))
		return dlrt_err_set(err, "task %llu of job %u has %u queries, not %u",
				    (unsigned long long)c->task, j->id,
				    dlrt_infer_task_size(j, c->task), c->res.n);
	first = dlrt_infer_task_first(j, c->task);
	j->task_done[c->task] = 1;
	j->tasks_done++;
	j->done += c->res.n;
	if (j->sub.labels) {
		for (uint32_t i = 0; i < c->res.n; i++)
			if (c->res.pred[i] == (int32_t)j->sub.labels[first + i])
				j->correct++;
		j->labelled += c->res.n;
	}
	return 0;
}

int dlrt_infer_state_apply(struct dlrt_infer_state *s, const struct dlrt_infer_change *c,
			   struct dlrt_err *err)
{
	struct dlrt_infer_job *j;

	if (c->seq != s->seq + 1)
		return dlrt_err_set(err, "change %llu out of order (the state is at %llu)",
				    (unsigned long long)c->seq, (unsigned long long)s->seq);
	if (c->epoch < s->epoch)
		return dlrt_err_set(err, "change %llu from epoch %llu, older than %llu",
				    (unsigned long long)c->seq, (unsigned long long)c->epoch,
				    (unsigned long long)s->epoch);
	if (c->kind == DLRT_CH_JOB_ADD) {
		if (apply_add(s, c, err) < 0)
			return -1;
	} else {
		j = dlrt_infer_state_job(s, c->job);
		if (!j)
			return dlrt_err_set(err, "change %llu names unknown job %u",
					    (unsigned long long)c->seq, c->job);
		if (j->state != DLRT_IP_JOB_RUNNING)
			return dlrt_err_set(err, "job %u has already ended", c->job);
		if (c->kind == DLRT_CH_TASK_DONE) {
			if (apply_task(j, c, err) < 0)
				return -1;
		} else if (c->kind == DLRT_CH_JOB_END) {
			if (c->state < DLRT_IP_JOB_DONE || c->state > DLRT_IP_JOB_FAILED)
				return dlrt_err_set(err, "job %u ends in unknown state %u",
						    c->job, c->state);
			if (c->state == DLRT_IP_JOB_DONE && j->tasks_done != j->ntasks)
				return dlrt_err_set(err, "job %u cannot be done with %u of %u tasks",
						    c->job, j->tasks_done, j->ntasks);
			j->state = c->state;
			j->t_end = c->wall;
			snprintf(j->error, sizeof(j->error), "%s", c->error);
		} else {
			return dlrt_err_set(err, "unknown change kind %u", c->kind);
		}
	}
	s->epoch = c->epoch;
	s->seq = c->seq;
	return 0;
}

/* ---- encoding -------------------------------------------------------------------- */

int dlrt_infer_change_put(struct dlrt_buf *b, const struct dlrt_infer_change *c)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_CHANGE);
	dlrt_ip_wr_u64(&w, c->epoch);
	dlrt_ip_wr_u64(&w, c->seq);
	dlrt_ip_wr_u8(&w, c->kind);
	dlrt_ip_wr_u32(&w, c->job);
	dlrt_ip_wr_f64(&w, c->wall);
	switch (c->kind) {
	case DLRT_CH_JOB_ADD: {
		/* The SUBMIT body, without its frame header. */
		struct dlrt_buf tmp;

		dlrt_buf_init(&tmp, DLRT_IP_MAX_FRAME + DLRT_IP_HDR);
		if (dlrt_ip_put_submit(&tmp, &c->sub) < 0)
			w.failed = true;
		else
			dlrt_ip_wr_bytes(&w, dlrt_buf_head(&tmp) + DLRT_IP_HDR,
					 tmp.len - DLRT_IP_HDR);
		dlrt_buf_free(&tmp);
		break;
	}
	case DLRT_CH_TASK_DONE:
		dlrt_ip_wr_u64(&w, c->task);
		dlrt_ip_wr_u32(&w, c->worker);
		dlrt_ip_wr_u32(&w, c->latency_us);
		dlrt_ip_wr_u64(&w, c->res.attempt);
		dlrt_ip_wr_u32(&w, c->res.busy_us);
		dlrt_ip_wr_u32(&w, c->res.n);
		for (uint32_t i = 0; i < c->res.n; i++) {
			dlrt_ip_wr_u32(&w, (uint32_t)c->res.pred[i]);
			dlrt_ip_wr_f32(&w, c->res.score[i]);
		}
		break;
	case DLRT_CH_JOB_END:
		dlrt_ip_wr_u8(&w, c->state);
		dlrt_ip_wr_str(&w, c->error);
		break;
	default:
		w.failed = true;
	}
	return dlrt_ip_wr_end(&w);
}

int dlrt_infer_change_get(const uint8_t *p, size_t n, struct dlrt_infer_change *c,
			  struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	/* Not the whole struct: its text fields take 16 KiB, and zeroing them
	 * for every change cost the standby (which decodes each one) more than
	 * the change. sub is set by JOB_ADD only, and freed for it only
	 * (dlrt_infer_change_free looks at the kind). */
	c->epoch = c->seq = 0;
	c->kind = 0;
	c->job = 0;
	c->wall = 0;
	c->task = 0;
	c->worker = c->latency_us = 0;
	memset(&c->res, 0, sizeof(c->res));
	c->state = 0;
	c->error[0] = 0;
	dlrt_ip_rd_init(&r, p, n);
	c->epoch = dlrt_ip_rd_u64(&r);
	c->seq = dlrt_ip_rd_u64(&r);
	c->kind = dlrt_ip_rd_u8(&r);
	c->job = dlrt_ip_rd_u32(&r);
	c->wall = dlrt_ip_rd_f64(&r);
	if (r.bad) {
		c->kind = 0; /* sub was never set */
		return dlrt_ip_rd_end(&r, "CHANGE", err);
	}
	switch (c->kind) {
	case DLRT_CH_JOB_ADD:
		return dlrt_ip_get_submit(p + r.off, n - r.off, &c->sub, err);
	case DLRT_CH_TASK_DONE:
		c->task = dlrt_ip_rd_u64(&r);
		c->worker = dlrt_ip_rd_u32(&r);
		c->latency_us = dlrt_ip_rd_u32(&r);
		if (r.bad)
			return dlrt_ip_rd_end(&r, "CHANGE", err);
		/* The rest has the RESULT layout after its job and task fields. */
		{
			struct dlrt_buf tmp;
			struct dlrt_ip_wr w;
			int rc;

			dlrt_buf_init(&tmp, DLRT_IP_MAX_FRAME + 64);
			dlrt_ip_wr_begin(&w, &tmp, DLRT_IP_RESULT);
			dlrt_ip_wr_u32(&w, c->job);
			dlrt_ip_wr_u64(&w, c->task);
			dlrt_ip_wr_bytes(&w, p + r.off, n - r.off);
			if (dlrt_ip_wr_end(&w) < 0) {
				dlrt_buf_free(&tmp);
				return dlrt_err_set(err, "malformed CHANGE message: too long");
			}
			rc = dlrt_ip_get_result(dlrt_buf_head(&tmp) + DLRT_IP_HDR,
						tmp.len - DLRT_IP_HDR, &c->res, err);
			dlrt_buf_free(&tmp);
			return rc;
		}
	case DLRT_CH_JOB_END:
		c->state = dlrt_ip_rd_u8(&r);
		dlrt_ip_rd_str(&r, c->error, DLRT_IP_STR_MAX);
		return dlrt_ip_rd_end(&r, "CHANGE", err);
	default:
		return dlrt_err_set(err, "malformed CHANGE message: unknown kind %u", c->kind);
	}
}

void dlrt_infer_change_free(struct dlrt_infer_change *c)
{
	if (c->kind == DLRT_CH_JOB_ADD)
		dlrt_ip_submit_free(&c->sub);
	dlrt_ip_result_free(&c->res);
}

#include "liveness.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"

/* 2^40 attempts per epoch: a million dispatches a second for 12 days. */
#define ATTEMPT_EPOCH_SHIFT 40

uint64_t dlrt_attempt_first(uint64_t epoch)
{
	return (epoch << ATTEMPT_EPOCH_SHIFT) + 1;
}

int dlrt_attempts_init(struct dlrt_attempts *a, uint32_t ntasks)
{
	a->n = ntasks;
	a->cur = calloc(ntasks ? ntasks : 1, sizeof(*a->cur));
	return a->cur ? 0 : -1;
}

void dlrt_attempts_free(struct dlrt_attempts *a)
{
	free(a->cur);
	a->cur = NULL;
	a->n = 0;
}

void dlrt_attempts_assign(struct dlrt_attempts *a, uint64_t task, uint64_t attempt)
{
	if (task < a->n)
		a->cur[task] = attempt;
}

enum dlrt_attempt_verdict dlrt_attempts_check(const struct dlrt_attempts *a, uint64_t task,
					      uint64_t attempt, bool done)
{
	if (task >= a->n)
		return DLRT_ATTEMPT_NOTASK;
	if (done || a->cur[task] == DLRT_ATTEMPT_ANSWERED)
		return DLRT_ATTEMPT_DONE;
	if (attempt == 0 || a->cur[task] != attempt)
		return DLRT_ATTEMPT_STALE;
	return DLRT_ATTEMPT_OK;
}

bool dlrt_attempts_release(struct dlrt_attempts *a, uint64_t task, uint64_t attempt)
{
	if (task >= a->n || attempt == 0 || a->cur[task] != attempt)
		return false;
	a->cur[task] = 0;
	return true;
}

void dlrt_attempts_answered(struct dlrt_attempts *a, uint64_t task)
{
	dlrt_attempts_assign(a, task, DLRT_ATTEMPT_ANSWERED);
}

bool dlrt_attempts_is_answered(const struct dlrt_attempts *a, uint64_t task)
{
	return task < a->n && a->cur[task] == DLRT_ATTEMPT_ANSWERED;
}

const char *dlrt_attempt_verdict_name(enum dlrt_attempt_verdict v)
{
	switch (v) {
	case DLRT_ATTEMPT_OK: return "current";
	case DLRT_ATTEMPT_DONE: return "already answered";
	case DLRT_ATTEMPT_STALE: return "dispatched again since";
	case DLRT_ATTEMPT_NOTASK: return "no such task";
	}
	return "?";
}

/* ---- heartbeats ---------------------------------------------------------------- */

int dlrt_hb_config(const char *bound_s, struct dlrt_hb *hb, struct dlrt_err *err)
{
	double b = DLRT_HB_DEFAULT_S;

	if (bound_s && *bound_s) {
		char *end;

		errno = 0;
		b = strtod(bound_s, &end);
		if (errno || end == bound_s || *end || !isfinite(b) || b < DLRT_HB_MIN_S ||
		    b > DLRT_HB_MAX_S)
			return dlrt_err_set(err, "heartbeat bound '%.40s': give seconds from %.1f "
					    "to %.0f (default %.0f)", bound_s, DLRT_HB_MIN_S,
					    DLRT_HB_MAX_S, DLRT_HB_DEFAULT_S);
	}
	hb->bound_ms = (int64_t)(b * 1000 + 0.5);
	/* Silence of 4/5 of the bound plus a check every 1/10: detected within
	 * 9/10 of it after the last heartbeat; with a heartbeat every 1/5, four
	 * in a row must go missing, so a briefly busy node is not declared dead. */
	hb->silence_ms = hb->bound_ms * 4 / 5;
	hb->check_ms = hb->bound_ms / 10;
	hb->interval_ms = hb->bound_ms / 5;
	hb->give_up_ms = hb->bound_ms * 15 > 30000 ? hb->bound_ms * 15 : 30000;
	return 0;
}

bool dlrt_hb_dead(const struct dlrt_hb *hb, int64_t last_ms, int64_t now_ms)
{
	return now_ms - last_ms > hb->silence_ms;
}

/* ---- walltime ------------------------------------------------------------------ */

static int digits(const char **p, int max, long *v)
{
	int n = 0;

	*v = 0;
	while (**p >= '0' && **p <= '9') {
		if (++n > max)
			return -1;
		*v = *v * 10 + (**p - '0');
		(*p)++;
	}
	return n ? 0 : -1;
}

int dlrt_walltime_parse_left(const char *s, int64_t *left)
{
	long f[4];
	int nf = 0;
	long days = 0;
	const char *p = s;

	*left = -1;
	if (!s)
		return -1;
	while (*p == ' ')
		p++;
	if (!*p || !strncmp(p, "UNLIMITED", 9) || !strncmp(p, "NOT_SET", 7) ||
	    !strncmp(p, "INVALID", 7))
		return 0;
	if (strchr(p, '-')) {
		if (digits(&p, 6, &days) < 0 || *p != '-')
			return -1;
		p++;
	}
	for (;;) {
		if (nf == 3 || digits(&p, 6, &f[nf]) < 0)
			return -1;
		nf++;
		if (*p != ':')
			break;
		p++;
	}
	while (*p == ' ' || *p == '\n')
		p++;
	if (*p)
		return -1;
	if (nf == 1)
		*left = f[0];
	else if (nf == 2)
		*left = f[0] * 60 + f[1];
	else
		*left = f[0] * 3600 + f[1] * 60 + f[2];
	*left += days * 86400;
	return 0;
}

int dlrt_walltime_margin(const char *s, int64_t *margin, struct dlrt_err *err)
{
	uint32_t v;

	*margin = DLRT_WALLTIME_MARGIN_DEFAULT;
	if (!s || !*s)
		return 0;
	if (dlrt_parse_u32(s, 0, 7 * 86400, &v) < 0)
		return dlrt_err_set(err, "walltime margin '%.40s': give whole seconds, 0 to %u "
				    "(default %d)", s, 7 * 86400, DLRT_WALLTIME_MARGIN_DEFAULT);
	*margin = v;
	return 0;
}

bool dlrt_walltime_near(int64_t end, int64_t now, int64_t margin)
{
	return end > 0 && end - now <= margin;
}

#include "hvd_plan.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keeps the plan (and the scope names built from it) small enough that a
 * typo such as "n1:20000000" fails here instead of allocating gigabytes. */
#define MAX_RANKS (1 << 20)

void dlrt_hvd_plan_free(struct dlrt_hvd_plan *plan)
{
	for (size_t i = 0; plan->hosts && i < plan->nhosts; i++)
		free(plan->hosts[i]);
	free(plan->hosts);
	free(plan->slots);
	free(plan->first_rank);
	free(plan->slot);
	memset(plan, 0, sizeof(*plan));
}

int dlrt_hvd_plan_build(struct dlrt_hvd_plan *plan, const char *const *hosts,
			const int *slots, size_t nhosts, struct dlrt_err *err)
{
	long total = 0;
	int max_slots = 0, rank = 0;

	memset(plan, 0, sizeof(*plan));
	if (nhosts == 0)
		return dlrt_err_set(err, "the Horovod host list is empty: give at least one host:slots");
	for (size_t h = 0; h < nhosts; h++) {
		if (slots[h] < 1)
			return dlrt_err_set(err, "host '%s' has %d slots: every host needs at least 1",
					    hosts[h], slots[h]);
		total += slots[h];
		if (total > MAX_RANKS)
			return dlrt_err_set(err, "the Horovod host list has more than %d slots: check the slot counts",
					    MAX_RANKS);
		if (slots[h] > max_slots)
			max_slots = slots[h];
		for (size_t j = 0; j < h; j++)
			if (strcmp(hosts[j], hosts[h]) == 0)
				return dlrt_err_set(err, "host '%s' appears twice in the Horovod host list: give each host once with all its slots",
						    hosts[h]);
	}
	plan->hosts = calloc(nhosts, sizeof(*plan->hosts));
	plan->slots = calloc(nhosts, sizeof(*plan->slots));
	plan->first_rank = calloc(nhosts, sizeof(*plan->first_rank));
	plan->slot = calloc((size_t)total, sizeof(*plan->slot));
	if (!plan->hosts || !plan->slots || !plan->first_rank || !plan->slot)
		goto fail_mem;
	plan->nhosts = nhosts;
	plan->nslots = (size_t)total;
	for (size_t h = 0; h < nhosts; h++) {
		plan->hosts[h] = strdup(hosts[h]);
		if (!plan->hosts[h])
			goto fail_mem;
		plan->slots[h] = slots[h];
		plan->first_rank[h] = rank;
		for (int lr = 0; lr < slots[h]; lr++) {
			struct dlrt_hvd_slot *s = &plan->slot[rank];
			int cross_rank = 0, cross_size = 0;

			/* Hosts with a slot at this local rank, in host order. */
			for (size_t o = 0; o < nhosts; o++) {
				if (slots[o] <= lr)
					continue;
				if (o < h)
					cross_rank++;
				cross_size++;
			}
			s->hostname = plan->hosts[h];
			s->rank = rank++;
			s->size = (int)total;
			s->local_rank = lr;
			s->local_size = slots[h];
			s->cross_rank = cross_rank;
			s->cross_size = cross_size;
		}
	}
	return 0;
fail_mem:
	dlrt_hvd_plan_free(plan);
	return dlrt_err_set(err, "out of memory building the Horovod host plan");
}

int dlrt_hvd_plan_without(struct dlrt_hvd_plan *next, const struct dlrt_hvd_plan *cur,
			  const unsigned char *drop, int min_np, int max_np,
			  struct dlrt_err *err)
{
	const char **names = calloc(cur->nhosts + 1, sizeof(*names));
	int *slots = calloc(cur->nhosts + 1, sizeof(*slots));
	size_t k = 0, gone = 0;
	long total = 0;
	int rv = -1;

	memset(next, 0, sizeof(*next));
	if (!names || !slots) {
		dlrt_err_set(err, "out of memory building the next Horovod host plan");
		goto out;
	}
	for (size_t h = 0; h < cur->nhosts; h++) {
		int n = cur->slots[h];

		if (drop[h]) {
			gone++;
			continue;
		}
		if (max_np > 0 && total + n > max_np)
			n = (int)(max_np - total);
		if (n <= 0)
			continue;
		names[k] = cur->hosts[h];
		slots[k++] = n;
		total += n;
	}
	if (k == 0) {
		dlrt_err_set(err, "elastic Horovod: all %zu hosts of the job are gone, none is left to "
			     "carry the training state on: the step ends (start it again from a checkpoint)",
			     cur->nhosts);
		goto out;
	}
	if (total < min_np) {
		dlrt_err_set(err, "elastic Horovod: %ld slots left after losing %zu host(s), below the "
			     "minimum of %d (--dl-hvd-min-np): the step ends (lower --dl-hvd-min-np, or "
			     "start it again on more nodes)", total, gone, min_np);
		goto out;
	}
	rv = dlrt_hvd_plan_build(next, names, slots, k, err);
out:
	free(names);
	free(slots);
	return rv;
}

long dlrt_hvd_plan_host(const struct dlrt_hvd_plan *plan, const char *host, size_t hostlen)
{
	for (size_t h = 0; h < plan->nhosts; h++)
		if (strlen(plan->hosts[h]) == hostlen && !memcmp(plan->hosts[h], host, hostlen))
			return (long)h;
	return -1;
}

static int valid_host_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '_' || c == '.' || c == '-';
}

int dlrt_hvd_plan_parse(struct dlrt_hvd_plan *plan, const char *spec,
			struct dlrt_err *err)
{
	size_t n = 1, k = 0;
	char *copy = NULL, **names = NULL;
	int *slots = NULL, rv = -1;

	memset(plan, 0, sizeof(*plan));
	if (!spec || !*spec)
		return dlrt_err_set(err, "the Horovod host list is empty: give host:slots[,host:slots...]");
	for (const char *p = spec; *p; p++)
		n += *p == ',';
	copy = strdup(spec);
	names = calloc(n, sizeof(*names));
	slots = calloc(n, sizeof(*slots));
	if (!copy || !names || !slots) {
		dlrt_err_set(err, "out of memory parsing the Horovod host list");
		goto out;
	}
	for (char *item = copy, *next; item; item = next) {
		char *colon, *end;
		long v;

		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		colon = strrchr(item, ':');
		if (!colon || colon == item || !colon[1]) {
			dlrt_err_set(err, "bad Horovod host entry '%s': write host:slots, e.g. node1:2,node2:1",
				     item);
			goto out;
		}
		*colon = '\0';
		for (char *c = item; *c; c++) {
			if (!valid_host_char(*c)) {
				dlrt_err_set(err, "bad host name '%s' in the Horovod host list: only letters, digits, '_', '.' and '-' are allowed",
					     item);
				goto out;
			}
		}
		errno = 0;
		v = strtol(colon + 1, &end, 10);
		if (*end || errno || v < 1 || v > MAX_RANKS || colon[1] < '0' || colon[1] > '9') {
			dlrt_err_set(err, "bad slot count '%s' for host '%s': give a number from 1 to %d",
				     colon + 1, item, MAX_RANKS);
			goto out;
		}
		names[k] = item;
		slots[k++] = (int)v;
	}
	rv = dlrt_hvd_plan_build(plan, (const char *const *)names, slots, k, err);
out:
	free(copy);
	free(names);
	free(slots);
	return rv;
}

const struct dlrt_hvd_slot *dlrt_hvd_plan_find(const struct dlrt_hvd_plan *plan,
					       const char *host, size_t hostlen,
					       long local_rank)
{
	for (size_t h = 0; h < plan->nhosts; h++) {
		if (strlen(plan->hosts[h]) != hostlen || memcmp(plan->hosts[h], host, hostlen))
			continue;
		if (local_rank < 0 || local_rank >= plan->slots[h])
			return NULL;
		return &plan->slot[plan->first_rank[h] + local_rank];
	}
	return NULL;
}

int dlrt_hvd_slot_format(const struct dlrt_hvd_slot *s, char *buf, size_t n)
{
	if (!s)
		return snprintf(buf, n, "-1,-1,-1,-1,-1,-1");
	return snprintf(buf, n, "%d,%d,%d,%d,%d,%d", s->rank, s->size, s->local_rank,
			s->local_size, s->cross_rank, s->cross_size);
}

/* exchange_srun.c - the address exchange carried by srun's rendezvous
 * (--dl-exchange=srun, and auto on nodes the job may share with other users).
 *
 * srun hosts a key/value store for the step (exchange/rdvclient.h, started by
 * spank/client.c); a node's first task publishes its values and reads the
 * ones it waits for in one round trip. srun lives exactly as long as the
 * step, so a value stays readable for every node that comes late. The store
 * admits only holders of the step secret, and every value is signed with it
 * (exchange/rdvclient.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "exchange/rdvclient.h"
#include "exchange_via.h"

static int rdv_open(const struct dlrt_exchange_req *req, struct dlrt_rdv *r, struct dlrt_err *err)
{
	if (!req->rdv || !req->rdv->port)
		return dlrt_err_set(err, "this step has no dlrt rendezvous (%s is not set by "
				    "srun): start the step with srun on a host where dlrt is "
				    "installed and enabled in plugstack.conf", DLRT_RDV_ENV);
	return dlrt_rdv_connect(r, req->rdv->ip, req->rdv->port, req->rdv->secret,
				dlrt_now_ms() + (int64_t)req->timeout_s * 1000, err);
}

int dlrt_exchange_via_srun(const struct dlrt_exchange_req *req, const struct dlrt_xlist *pub,
			   const struct dlrt_xlist *want, struct dlrt_buf *text, struct dlrt_err *err)
{
	struct dlrt_rdv r;
	size_t n = want->n;
	char **values = calloc(n ? n : 1, sizeof(*values));
	const char **keys = calloc(n ? n : 1, sizeof(*keys));
	int rc = -1;

	if (!values || !keys) {
		free(values);
		free((void *)keys);
		return dlrt_err_set(err, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		keys[i] = want->v[i].key;
	if (rdv_open(req, &r, err) < 0) {
		free(values);
		free((void *)keys);
		return -1;
	}
	for (size_t i = 0; i < pub->n; i++)
		if (dlrt_rdv_set(&r, pub->v[i].key, pub->v[i].value, err) < 0)
			goto out;
	if (dlrt_rdv_get(&r, keys, n, values, err) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		char prefix[24] = "";

		if (want->v[i].rank >= 0)
			snprintf(prefix, sizeof(prefix), "%ld ", want->v[i].rank);
		if (dlrt_buf_append(text, prefix, strlen(prefix)) < 0 ||
		    dlrt_buf_append(text, values[i], strlen(values[i])) < 0 ||
		    dlrt_buf_append(text, "\n", 1) < 0) {
			dlrt_err_set(err, "the answers of the exchange do not fit in memory");
			goto out;
		}
	}
	rc = 0;
out:
	for (size_t i = 0; i < n; i++) {
		if (values[i])
			memset(values[i], 0, strlen(values[i])); /* may hold a step secret */
		free(values[i]);
	}
	free(values);
	free((void *)keys);
	dlrt_rdv_close(&r);
	return rc;
}


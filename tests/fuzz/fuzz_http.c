/* fuzz_http.c - the Horovod driver's HTTP parser and rendezvous store.
 *
 * The input is a stream of requests as a client would send them. For each
 * request the parser runs twice, on the whole buffer and fed in growing
 * prefixes (as reads arrive), and the two must agree; complete requests go to
 * a store with an uneven host plan, and the reply is serialised, as the
 * driver does. Checks: no crash, no leak (ASan), consumed within bounds,
 * incremental == one-shot.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "launchers/horovod/http.h"
#include "launchers/horovod/hvd_plan.h"
#include "launchers/horovod/rendezvous.h"

static const struct dlrt_http_limits lim = {
	.max_head = 2048, .max_headers = 16, .max_body = 1024,
};

static int parse_in_steps(const uint8_t *d, size_t n, size_t step, struct dlrt_http_req *req)
{
	struct dlrt_http_parser p;
	int rc = DLRT_HTTP_NEED_MORE;

	dlrt_http_parser_init(&p);
	for (size_t have = step < n ? step : n;; have += step) {
		if (have > n)
			have = n;
		rc = dlrt_http_parse(&p, d, have, &lim, req);
		if (rc != DLRT_HTTP_NEED_MORE || have == n)
			return rc;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlrt_hvd_plan plan;
	struct dlrt_hvd_store *st;
	struct dlrt_err err;
	struct dlrt_buf out;
	size_t step;

	if (size < 1)
		return 0;
	step = (size_t)(data[0] % 7) + 1;
	data++;
	size--;
	if (dlrt_hvd_plan_parse(&plan, "n1:3,n2:1,n3:2", &err) < 0)
		abort();
	if (dlrt_hvd_store_create(&st, &plan, 1 << 16, &err) < 0)
		abort();
	dlrt_hvd_plan_free(&plan);
	dlrt_buf_init(&out, 1 << 16);

	while (size) {
		struct dlrt_http_req a, b;
		struct dlrt_hvd_reply r;
		struct dlrt_http_parser p;
		int ra, rb;

		dlrt_http_parser_init(&p);
		ra = dlrt_http_parse(&p, data, size, &lim, &a);
		rb = parse_in_steps(data, size, step, &b);
		if (ra != rb)
			abort(); /* partial input changed the verdict */
		if (ra != DLRT_HTTP_COMPLETE) {
			if (ra != DLRT_HTTP_NEED_MORE && (ra < 400 || ra > 599))
				abort();
			dlrt_http_reply(&out, ra, NULL, 0);
			break;
		}
		if (a.consumed != b.consumed || a.consumed == 0 || a.consumed > size ||
		    a.body_len != b.body_len || a.body_len > lim.max_body ||
		    a.target_len != b.target_len || a.method != b.method)
			abort();
		dlrt_hvd_store_handle(st, a.method, a.target, a.target_len, a.body, a.body_len, &r);
		if (r.status != 200 && r.status != 400 && r.status != 404 && r.status != 507)
			abort();
		dlrt_buf_consume(&out, out.len);
		dlrt_http_reply(&out, r.status, r.body, r.len);
		data += a.consumed;
		size -= a.consumed;
	}
	dlrt_buf_free(&out);
	dlrt_hvd_store_destroy(st);
	return 0;
}

#include "store_session.h"

#include <time.h>

void dlrt_store_session_init(struct dlrt_store_session *s, struct dlrt_kv *kv,
			     size_t max_bulk, size_t max_args)
{
	dlrt_resp_init(&s->parser, max_bulk, max_args);
	dlrt_kv_client_init(kv, &s->client);
	s->out_pause = 0;
}

void dlrt_store_session_free(struct dlrt_store_session *s)
{
	dlrt_resp_free(&s->parser);
	dlrt_kv_client_free(&s->client);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int dlrt_store_session_feed(struct dlrt_store_session *s, struct dlrt_kv *kv,
			    struct dlrt_buf *in, struct dlrt_buf *out,
			    dlrt_store_log_fn log, void *log_arg)
{
	for (;;) {
		int64_t t0 = log ? now_ns() : 0;
		int rc;

		if (s->out_pause && out->len >= s->out_pause)
			return 0; /* the rest once the client has read its replies */
		rc = dlrt_resp_parse(&s->parser, dlrt_buf_head(in), in->len);

		if (rc == DLRT_RESP_NEED_MORE)
			return 0;
		if (rc == DLRT_RESP_ERROR) {
			/* Redis answers, then hangs up: the stream is out of sync. */
			dlrt_resp_add_error(out, s->parser.error);
			dlrt_buf_consume(in, in->len);
			return -1;
		}
		if (rc == DLRT_RESP_COMPLETE) {
			int x = dlrt_kv_exec(kv, &s->client, s->parser.argc, s->parser.argv,
					     s->parser.argvlen, out);

			if (log)
				log(log_arg, &s->client, s->parser.argc, s->parser.argv,
				    s->parser.argvlen, now_ns() - t0);
			if (x != DLRT_KV_EXEC_OK) {
				dlrt_buf_consume(in, in->len);
				return -1;
			}
		}
		dlrt_buf_consume(in, s->parser.used);
	}
}

bool dlrt_store_session_partial(const struct dlrt_store_session *s,
				const struct dlrt_buf *in)
{
	return dlrt_resp_partial(&s->parser, in->len);
}

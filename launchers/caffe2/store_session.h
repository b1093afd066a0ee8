/* store_session.h - one client connection of the Caffe2 helper store:
 * parse every complete request in the input, execute it, queue the replies
 * in order (pipelining), and say when the connection must close.
 *
 * The TCP side (tcpserver.h) calls dlrt_store_session_feed from on_data;
 * the fuzzer and the unit tests call it directly with byte strings.
 */
#ifndef DLRT_STORE_SESSION_H
#define DLRT_STORE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "kvstore.h"
#include "resp.h"

struct dlrt_store_session {
	struct dlrt_resp_parser parser;
	struct dlrt_kv_client client;
	/* Stop executing requests while this many reply bytes wait to be sent
	 * (0 = never): a client that pipelines requests without reading its
	 * replies then costs at most this plus one reply, and the rest of its
	 * requests wait in the input (tcpserver.h: out_pause). */
	size_t out_pause;
};

/* Called after each executed request (for --verbose): the request, and how
 * long parsing + executing took in nanoseconds. */
typedef void (*dlrt_store_log_fn)(void *arg, const struct dlrt_kv_client *cl,
				  size_t argc, const uint8_t *const *argv,
				  const size_t *argvlen, int64_t ns);

void dlrt_store_session_init(struct dlrt_store_session *s, struct dlrt_kv *kv,
			     size_t max_bulk, size_t max_args);
void dlrt_store_session_free(struct dlrt_store_session *s);

/* Consumes complete requests from `in`, appends replies to `out`, until `in`
 * holds no complete request or `out` reaches s->out_pause. Returns 0
 * to keep the connection, -1 to send what is in `out` and close (protocol
 * error, QUIT, reply too large). `log` may be NULL. */
int dlrt_store_session_feed(struct dlrt_store_session *s, struct dlrt_kv *kv,
			    struct dlrt_buf *in, struct dlrt_buf *out,
			    dlrt_store_log_fn log, void *log_arg);

/* True if `in` holds part of a request (a stalled client to time out). */
bool dlrt_store_session_partial(const struct dlrt_store_session *s,
				const struct dlrt_buf *in);

#endif

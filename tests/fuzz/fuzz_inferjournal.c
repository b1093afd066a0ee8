/* fuzz_inferjournal.c - libFuzzer target for the journal parser
 * (inference/state/journal.c): a journal is file input that a crash may have torn
 * or a disk corrupted. The input is parsed as a whole journal image; every
 * record the parser accepts is decoded and applied to a state exactly as a
 * restarting coordinator does. The good prefix must re-parse to the same
 * records, with nothing torn. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inference/state/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int apply(void *arg, const uint8_t *frame, size_t n, struct dlrt_err *err)
{
	struct dlrt_infer_state *st = arg;
	struct dlrt_infer_change ch;
	int rc = dlrt_infer_change_get(frame + DLRT_IP_HDR, n - DLRT_IP_HDR, &ch, err);

	if (rc == 0)
		rc = dlrt_infer_state_apply(st, &ch, err);
	dlrt_infer_change_free(&ch);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlrt_infer_state st, st2;
	struct dlrt_journal_scan scan, scan2;
	struct dlrt_err err;

	dlrt_infer_state_init(&st);
	dlrt_infer_state_init(&st2);
	if (dlrt_journal_parse(data, size, apply, &st, &scan, &err) == 0) {
		if (scan.good > size)
			abort();
		if (scan.records) {
			if (dlrt_journal_parse(data, scan.good, apply, &st2, &scan2, &err) != 0 ||
			    scan2.torn || scan2.records != scan.records || st2.seq != st.seq)
				abort(); /* the good prefix is good on its own */
		}
	}
	dlrt_infer_state_free(&st);
	dlrt_infer_state_free(&st2);
	return 0;
}

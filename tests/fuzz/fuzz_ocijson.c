/* fuzz_ocijson.c - libFuzzer target for dlrt-oci-run's reading and editing
 * of a bundle's config.json (tools/ocitask.c on tools/ocijson.c), the file
 * a user gives srun --container. The input is the whole config.json; it is
 * read as a dlrt task's (the environment written into process.env) and as a
 * step without dlrt's. Whatever is accepted must come out as JSON again, with
 * the environment in it. Seeds: crun's `crun spec --rootless`, the test
 * cluster's bundles (tests/cluster/images.sh), a Slurm-style compact one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ocijson.h"
#include "tools/ocitask.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *env[] = { "SLURM_PROCID=0", "RANK=0", "Q=\"\\\n\xff\xc3\xa9", "PATH=/bin",
		       NULL };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *doc = (const char *)data;
	struct dlrt_ocijson_span top, process, val;
	struct dlrt_err err;
	struct dlrt_buf out;
	int rc;

	dlrt_buf_init(&out, DLRT_OCITASK_MAX_OUT);
	rc = dlrt_ocitask_build(doc, size, NULL, &out, &err);
	if (rc == 0 && (out.len != size || memcmp(dlrt_buf_head(&out), data, size) != 0))
		abort(); /* a step without dlrt: config.json unchanged */
	dlrt_buf_free(&out);

	dlrt_buf_init(&out, DLRT_OCITASK_MAX_OUT);
	rc = dlrt_ocitask_build(doc, size, env, &out, &err);
	if (rc == 0) {
		const char *o = (const char *)dlrt_buf_head(&out);

		if (dlrt_ocijson_check(o, out.len, &top, &err) < 0 ||
		    dlrt_ocijson_member(o, top, "process", &process) != 1 ||
		    dlrt_ocijson_member(o, process, "env", &val) != 1 ||
		    dlrt_ocijson_type(o, val) != DLRT_OCIJSON_ARRAY || val.len < 40)
			abort(); /* the output is JSON with the task's process.env */
	} else if (rc < 0 && (!err.msg[0] || strchr(err.msg, '\n'))) {
		abort(); /* errors are one line */
	}
	dlrt_buf_free(&out);
	return 0;
}

/* Fuzz target: a node's preflight line (preflight/pfline.c), which srun reads
 * from the helper step's output, and the verdict drawn from three of them
 * (preflight/pfdecide.c). A line that parses must format back to one that
 * parses to the same fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "preflight/pfdecide.h"
#include "preflight/pfline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlrt_pf_result r[3], back;
	struct dlrt_pf_verdict v[3];
	struct dlrt_pf_spec s;
	const char *names[3] = { "n1", "n2", "n3" };
	bool have[3] = { false, true, true };
	char line[DLRT_PF_LINE_MAX];
	size_t n;

	if (dlrt_pf_line_parse((const char *)data, size, &r[0]) < 0)
		return 0;
	n = dlrt_pf_line_format(&r[0], line, sizeof(line));
	if (dlrt_pf_line_parse(line, n, &back) < 0 || memcmp(&back, &r[0], sizeof(back)))
		abort();
	r[1] = r[2] = r[0];
	have[0] = true;
	dlrt_pf_spec_default(&s);
	if (dlrt_pf_decide(&s, r, have, names, 3, v) > 3)
		abort();
	return 0;
}

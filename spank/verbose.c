/* verbose.c - --dl-verbose: one stderr line per piece of dlrt's work in a task,
 * with how long it took, so a hang or a slow start points at its step:
 *
 *   dlrt: n2 task 3: role table (6 tasks, 3 nodes) built in 0.04 ms
 *   dlrt: n2 task 3: address exchange through srun: 1.2 ms, root 10.77.0.11:40321
 *   dlrt: n2 task 3: output also to /home/u/logs/81/0/worker-2.log
 *   dlrt: n2 task 3: ready after 13.1 ms in dlrt: RUNTIME worker 2, starting the program
 *
 * Printed from the task itself (task_init), so it reaches srun's stderr or the
 * batch error file; services other parts of dlrt start log through it too.
 */
#include <stdarg.h>
#include <stdio.h>

#include "common/clock.h"
#include "plugin.h"

double dlrt_verbose_now_ms(void)
{
	return (double)dlrt_now_us() / 1e3;
}

void dlrt_verbose(uint32_t rank, const char *fmt, ...)
{
	char line[768];
	va_list ap;

	if (!dlrt_plugin.opts.verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "dlrt: %s task %u: %s\n",
		dlrt_plugin.layout.nodes.names ? dlrt_plugin.layout.nodes.names[dlrt_plugin.node_id] : "?",
		rank, line);
	fflush(stderr);
}

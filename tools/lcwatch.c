/* lcwatch.c - what dlrt-lifecycle's two jobs share (lcwatch.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/privdir.h"
#include "lcwatch.h"
#include "logs/logline.h"

#define RECORD "dlrt-retries.log"

uint32_t dlrt_lcw_ntasks(const struct dlrt_lcw *w)
{
	if (!w->page)
		return 0;
	return w->page->ntasks < DLRT_LC_MAX_TASKS ? w->page->ntasks : DLRT_LC_MAX_TASKS;
}

void dlrt_lcw_record(const struct dlrt_lcw *w, const char *fmt, ...)
{
	char line[1024], name[16], shown[2400];
	struct dlrt_privdir_jobdir jd;
	struct dlrt_err err = { "" };
	va_list ap;
	int base, dir, fd, n;

	if (!w->record_base || !w->record_base[0])
		return;
	va_start(ap, fmt);
	n = (int)dlrt_logline_vformat(line, sizeof(line), fmt, ap);
	va_end(ap);
	snprintf(name, sizeof(name), "%u", w->record_job ? w->record_job : w->job);
	base = dlrt_privdir_base(w->record_base, "--dl-signal", &err);
	dir = base < 0 ? -1 : dlrt_privdir_job(base, w->record_base, name, "--dl-signal", &jd,
					      &err);
	snprintf(shown, sizeof(shown), "%s/%s/" RECORD, w->record_base, name);
	fd = dir < 0 ? -1 : dlrt_privdir_append(dir, RECORD, shown, "--dl-signal", &err);
	if (fd < 0 || write(fd, line, (size_t)n) != n)
		fprintf(stderr, DLRT_LCW_PROG ": cannot record \"%.*s\": %s\n", n - 1, line,
			err.msg[0] ? err.msg : strerror(errno));
	if (fd >= 0)
		close(fd);
	if (dir >= 0)
		close(dir);
	if (base >= 0)
		close(base);
}

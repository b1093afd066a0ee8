#include "dlrt_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int dlrt_err_set(struct dlrt_err *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int dlrt_err_errno(struct dlrt_err *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	size_t len;

	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	len = strlen(err->msg);
	snprintf(err->msg + len, sizeof(err->msg) - len, ": %s", strerror(errnum));
	return -1;
}

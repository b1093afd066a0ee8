#include "retrylog.h"

#include <stdio.h>
#include <string.h>

void dlrt_retry_list_add(char *list, size_t len, const char *name)
{
	size_t n = strlen(name), l = strnlen(list, len);

	if (!n || strchr(name, ',') || l >= len)
		return;
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");

		if (k == n && !strncmp(p, name, n))
			return;
		p += k + (p[k] == ',');
	}
	if (l + n + 2 <= len)
		snprintf(list + l, len - l, "%s%s", l ? "," : "", name);
}

void dlrt_retry_field(const char *text, const char *key, char *out, size_t len)
{
	const char *p = text;
	size_t k = strlen(key);

	if (!len)
		return;
	out[0] = '\0';
	/* The key must start a word: "ReqNodeList=" is not "NodeList=". */
	while ((p = strstr(p, key)) && p != text && p[-1] != ' ' && p[-1] != '\n')
		p += k;
	if (p) {
		size_t n = strcspn(p + k, " \n");

		snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p + k);
	}
}

/* Copies the word at p (up to a blank or newline) into word[wlen]; 0 if empty. */
static size_t word(const char *p, char *word, size_t wlen)
{
	size_t n = strcspn(p, " \t\n");

	if (n == 0 || n >= wlen)
		return 0;
	memcpy(word, p, n);
	word[n] = '\0';
	return n;
}

/* The signal of a "... signal=N" line (up to end, or the string's end); -1 if none. */
static int line_signal(const char *line, const char *end)
{
	const char *p = strstr(line, " signal=");
	int sig;

	if (!p || (end && p > end) || sscanf(p + 8, "%d", &sig) != 1)
		return -1;
	return sig;
}

void dlrt_retry_log_nodes(const char *log, uint32_t attempt, int ignore_sig, char *list,
			  size_t len)
{
	char want[40], node[128];

	snprintf(want, sizeof(want), " attempt=%u node=", attempt);
	for (const char *line = log; line && *line;) {
		const char *end = strchr(line, '\n'), *p = strstr(line, want);

		if (p && (!end || p < end) && word(p + strlen(want), node, sizeof(node)) &&
		    (!ignore_sig || line_signal(line, end) != ignore_sig))
			dlrt_retry_list_add(list, len, node);
		line = end ? end + 1 : NULL;
	}
}

bool dlrt_retry_log_warned(const char *log, uint32_t attempt)
{
	char want[48];

	snprintf(want, sizeof(want), " attempt=%u warning ", attempt);
	for (const char *line = log; line && *line;) {
		const char *end = strchr(line, '\n'), *p = strstr(line, want);

		if (p && (!end || p < end))
			return true;
		line = end ? end + 1 : NULL;
	}
	return false;
}

void dlrt_retry_down_nodes(const char *sinfo, char *list, size_t len)
{
	char node[128], st[64];

	for (const char *line = sinfo; line && *line;) {
		const char *end = strchr(line, '\n'), *sp;
		size_t n = word(line, node, sizeof(node));

		sp = n ? line + n : NULL;
		if (sp && *sp == ' ' && word(sp + 1, st, sizeof(st)) &&
		    (strchr(st, '*') || !strncmp(st, "down", 4) || !strncmp(st, "fail", 4) ||
		     !strncmp(st, "drain", 5)))
			dlrt_retry_list_add(list, len, node);
		line = end ? end + 1 : NULL;
	}
}

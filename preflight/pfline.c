#include "pfline.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/parse.h"

static const char *const ckpt_words[] = { "none", "shared", "unshared" };

size_t dlrt_pf_line_format(const struct dlrt_pf_result *r, char *out, size_t len)
{
	int n = snprintf(out, len,
			 "dlrt-preflight idx=%u node=%s clock_us=%" PRId64 " rtt_us=%u bw_kBps=%" PRIu64
			 " ckpt=%s unreach=%s fail=%s%s%s\n",
			 r->idx, r->node, r->clock_us, r->rtt_us, r->bw_kBps,
			 ckpt_words[(unsigned)r->ckpt < 3 ? r->ckpt : 0], r->unreach[0] ? r->unreach : "-",
			 r->check[0] ? r->check : "-", r->check[0] ? " " : "", r->check[0] ? r->figure : "");

	if (n < 0)
		return 0;
	return (size_t)n < len ? (size_t)n : len - 1;
}

/* The field "KEY=VALUE " at *p: the value's bytes into val (NUL-terminated),
 * *p past the blank. -1 when the key differs or the value is empty/too long. */
static int field(const char **p, const char *end, const char *key, char *val, size_t vlen)
{
	size_t k = strlen(key), n = 0;

	if ((size_t)(end - *p) < k + 2 || memcmp(*p, key, k) || (*p)[k] != '=')
		return -1;
	*p += k + 1;
	while (*p + n < end && (*p)[n] != ' ')
		n++;
	if (n == 0 || n >= vlen || *p + n >= end)
		return -1;
	memcpy(val, *p, n);
	val[n] = '\0';
	*p += n + 1;
	return 0;
}

static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
			return false;
	return true;
}

/* A list of step indices "1,5,7" (or "-"), strictly. */
static int index_list(const char *v, char *out, size_t len)
{
	uint32_t x;
	char one[16];

	if (!strcmp(v, "-")) {
		out[0] = '\0';
		return 0;
	}
	for (const char *p = v;;) {
		size_t n = strcspn(p, ",");

		if (n == 0 || n >= sizeof(one))
			return -1;
		memcpy(one, p, n);
		one[n] = '\0';
		if (dlrt_parse_u32(one, 0, 1u << 20, &x) < 0)
			return -1;
		if (!p[n])
			break;
		p += n + 1;
	}
	if (strlen(v) >= len)
		return -1;
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

static int parse_i64(const char *v, int64_t *out)
{
	uint32_t hi;
	bool neg = v[0] == '-';
	uint64_t m = 0;

	/* at most 3600 s either way: the largest offset worth naming */
	if (dlrt_parse_u32(v + neg, 0, 3600u * 1000u * 1000u, &hi) < 0)
		return -1;
	m = hi;
	*out = neg ? -(int64_t)m : (int64_t)m;
	return 0;
}

int dlrt_pf_line_parse(const char *s, size_t len, struct dlrt_pf_result *r)
{
	static const char head[] = "dlrt-preflight ";
	const char *p = s, *end = s + len;
	char v[DLRT_PF_UNREACH_MAX];
	uint32_t u;

	memset(r, 0, sizeof(*r));
	if (len && s[len - 1] == '\n')
		end--;
	if (len > DLRT_PF_LINE_MAX || (size_t)(end - p) < sizeof(head) - 1 ||
	    memcmp(p, head, sizeof(head) - 1) || !printable(s, (size_t)(end - s)))
		return -1;
	p += sizeof(head) - 1;
	if (field(&p, end, "idx", v, 16) < 0 || dlrt_parse_u32(v, 0, 1u << 20, &r->idx) < 0 ||
	    field(&p, end, "node", r->node, sizeof(r->node)) < 0 ||
	    field(&p, end, "clock_us", v, 16) < 0 || parse_i64(v, &r->clock_us) < 0 ||
	    field(&p, end, "rtt_us", v, 16) < 0 || dlrt_parse_u32(v, 0, 4000000000u, &r->rtt_us) < 0 ||
	    field(&p, end, "bw_kBps", v, 16) < 0 || dlrt_parse_u32(v, 0, 4000000000u, &u) < 0)
		return -1;
	r->bw_kBps = u;
	if (field(&p, end, "ckpt", v, 16) < 0)
		return -1;
	for (u = 0; u < 3 && strcmp(v, ckpt_words[u]); u++)
		;
	if (u == 3)
		return -1;
	r->ckpt = (enum dlrt_pf_ckpt)u;
	if (field(&p, end, "unreach", v, sizeof(v)) < 0 ||
	    index_list(v, r->unreach, sizeof(r->unreach)) < 0)
		return -1;
	/* fail=- is last; fail=CHECK FIGURE runs to the end */
	if ((size_t)(end - p) < 6 || memcmp(p, "fail=", 5))
		return -1;
	p += 5;
	if (end - p == 1 && *p == '-')
		return 0;
	{
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		size_t n = sp ? (size_t)(sp - p) : (size_t)(end - p);

		if (p + n >= end || n == 0 || n >= sizeof(r->check) || (size_t)(end - p - n - 1) == 0 ||
		    (size_t)(end - p - n - 1) >= sizeof(r->figure))
			return -1;
		for (size_t i = 0; i < n; i++)
			if (!((p[i] >= 'a' && p[i] <= 'z') || p[i] == '-'))
				return -1;
		memcpy(r->check, p, n);
		r->check[n] = '\0';
		memcpy(r->figure, p + n + 1, (size_t)(end - p - n - 1));
		r->figure[end - p - n - 1] = '\0';
	}
	return 0;
}

bool dlrt_pf_unreached(const struct dlrt_pf_result *r, uint32_t i)
{
	char want[16];
	size_t k = (size_t)snprintf(want, sizeof(want), "%u", i);

	for (const char *p = r->unreach; *p;) {
		size_t n = strcspn(p, ",");

		if (n == k && !memcmp(p, want, k))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

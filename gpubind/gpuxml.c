/* gpuxml.c - say why hwloc refused a topology file.
 *
 * hwloc_topology_load() fails with errno EINVAL, or with errno untouched
 * (an allowed_cpuset without any of the machine's CPUs leaves "Success"),
 * and prints its reason only to stderr, and only with HWLOC_XML_VERBOSE.
 * Library code must not capture stderr, so on failure this looks at the
 * text itself for the causes hwloc checks: an XML version newer than this
 * hwloc reads, and cpuset attributes hwloc cannot use. It only ever runs on
 * a file hwloc has already refused, and reads it as plain bytes (no XML
 * parser of its own: it looks for a few attribute names).
 */
#include "gpuplan.h"

#include <stdlib.h>
#include <string.h>

/* Value of attribute `name` in the tag [tag, end): *val and *vlen. */
static int span(const char *tag, const char *end, const char *name, const char **val,
		size_t *vlen)
{
	size_t n = strlen(name);

	for (const char *p = tag; p + n + 2 <= end; p++) {
		const char *q, *v;

		if (memcmp(p, name, n) != 0 || p[n] != '=' || p[n + 1] != '"' ||
		    (p > tag && p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n' && p[-1] != '\r'))
			continue;
		v = p + n + 2;
		q = memchr(v, '"', (size_t)(end - v));
		if (!q)
			return 0;
		*val = v;
		*vlen = (size_t)(q - v);
		return 1;
	}
	return 0;
}

/* The same, copied (cut to fit) into val, for short attributes and messages. */
static int attr(const char *tag, const char *end, const char *name, char *val, size_t len)
{
	const char *v;
	size_t n;

	if (!span(tag, end, name, &v, &n))
		return 0;
	/* It goes into a one-line message: control bytes become '?'. */
	for (size_t i = 0; i + 1 < len; i++) {
		if (i == n) {
			val[i] = '\0';
			return 1;
		}
		val[i] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
	}
	if (len)
		val[len - 1] = '\0';
	return 1;
}

/* A NUL-terminated copy of an attribute value for hwloc_bitmap_sscanf. */
static char *attr_dup(const char *tag, const char *end, const char *name)
{
	const char *v;
	size_t n;
	char *c;

	if (!span(tag, end, name, &v, &n) || !(c = malloc(n + 1)))
		return NULL;
	memcpy(c, v, n);
	c[n] = '\0';
	return c;
}

/* hwloc's bitmap text: "0x" words of 1-8 hex digits separated by commas,
 * the first may be "0xf...f" (infinite). An empty value is refused too. */
static int bitmap_ok(const char *s, const char *end)
{
	if (s == end)
		return 0;
	for (;;) {
		int digits = 0;

		if (end - s < 2 || s[0] != '0' || s[1] != 'x')
			return 0;
		s += 2;
		if (end - s >= 5 && memcmp(s, "f...f", 5) == 0) {
			s += 5;
			digits = 1;
		}
		while (s < end && ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') ||
				   (*s >= 'A' && *s <= 'F'))) {
			s++;
			digits++;
		}
		if (!digits || digits > 16)
			return 0;
		if (s == end)
			return 1;
		if (*s++ != ',')
			return 0;
	}
}

/* Objects that need a cpuset: hwloc's "normal" ones, not I/O, Misc or memory. */
static int is_normal(const char *type)
{
	static const char *const other[] = { "Bridge", "PCIDev", "OSDev", "Misc", "NUMANode",
					     "MemCache" };

	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		if (strcmp(type, other[i]) == 0)
			return 0;
	return 1;
}

static const char *mem_find(const char *hay, const char *end, const char *needle)
{
	size_t n = strlen(needle);

	for (const char *p = hay; p && p + n <= end; p++) {
		p = memchr(p, needle[0], (size_t)(end - p));
		if (!p || p + n > end)
			return NULL;
		if (memcmp(p, needle, n) == 0)
			return p;
	}
	return NULL;
}

int dlrt_gpuplan_xml_why(const char *xml, size_t len, char *why, size_t whylen)
{
	static const char *const sets[] = { "cpuset", "complete_cpuset", "allowed_cpuset" };
	const char *end = xml + len, *p, *tagend, *sv;
	char v[64], type[32], idx[16];
	size_t sn;
	int first = 1;

	p = mem_find(xml, end, "<topology");
	if (p && (tagend = memchr(p, '>', (size_t)(end - p))) && attr(p, tagend, "version", v,
								      sizeof(v))) {
		long major = strtol(v, NULL, 10);

		/* Asked only once hwloc has refused the text: hwloc 2.9 reads
		 * version 2 at most, 2.12 reads 3.0 too (and 3.x reads its own). */
		if (major > 2) {
			unsigned api = hwloc_get_api_version();

			snprintf(why, whylen, "it is hwloc XML version %s, newer than this hwloc "
				 "(API %u.%u) reads: export it with lstopo --of xml of hwloc 2.x",
				 v, api >> 16, (api >> 8) & 0xff);
			return 1;
		}
	}
	for (p = xml; (p = mem_find(p, end, "<object ")); p = tagend) {
		tagend = memchr(p, '>', (size_t)(end - p));
		if (!tagend)
			break;
		if (!attr(p, tagend, "type", type, sizeof(type)))
			continue;
		if (!attr(p, tagend, "os_index", idx, sizeof(idx)))
			snprintf(idx, sizeof(idx), "?");
		for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
			if (!span(p, tagend, sets[i], &sv, &sn)) {
				if (i == 0 && is_normal(type)) {
					snprintf(why, whylen, "object %s P#%s has no cpuset "
						 "attribute: export the topology again with "
						 "lstopo --of xml", type, idx);
					return 1;
				}
				continue;
			}
			if (!bitmap_ok(sv, sv + sn)) {
				attr(p, tagend, sets[i], v, 41);
				snprintf(why, whylen, "object %s P#%s has %s=\"%s\", which is "
					 "not an hwloc bitmap (0x-prefixed hex words separated by "
					 "commas): correct it or export the topology again with "
					 "lstopo --of xml", type, idx, sets[i], v);
				return 1;
			}
		}
		/* hwloc loads no topology whose allowed CPUs miss every CPU. */
		if (first) {
			char *as = attr_dup(p, tagend, "allowed_cpuset");
			char *cs = attr_dup(p, tagend, "cpuset");
			hwloc_bitmap_t a = hwloc_bitmap_alloc(), c = hwloc_bitmap_alloc();
			int disjoint = as && cs && a && c && hwloc_bitmap_sscanf(a, as) == 0 &&
				       hwloc_bitmap_sscanf(c, cs) == 0 &&
				       !hwloc_bitmap_intersects(a, c);

			if (disjoint) {
				char ac[41], cc[41];

				attr(p, tagend, "allowed_cpuset", ac, sizeof(ac));
				attr(p, tagend, "cpuset", cc, sizeof(cc));
				snprintf(why, whylen, "its allowed_cpuset=\"%s\" holds none of the "
					 "machine's CPUs (cpuset=\"%s\"), so hwloc finds no usable "
					 "CPU: correct or remove allowed_cpuset", ac, cc);
			}
			free(as);
			free(cs);
			hwloc_bitmap_free(a);
			hwloc_bitmap_free(c);
			if (disjoint)
				return 1;
		}
		first = 0;
	}
	return 0;
}

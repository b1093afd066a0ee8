#include "pfspec.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/parse.h"

static const char *const mode_names[] = { "off", "quick", "full" };

const char *dlrt_pf_mode_name(enum dlrt_pf_mode m)
{
	return (unsigned)m < 3 ? mode_names[m] : "off";
}

void dlrt_pf_spec_default(struct dlrt_pf_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->mode = DLRT_PF_OFF;
	s->shm_mib = 64;
	s->clock_ms = 1000;
	s->timeout_s = 10;
	snprintf(s->gpudev, sizeof(s->gpudev), "/dev/nvidia");
}

/* One word of the list into t; false when it is not a valid word. */
static bool apply_word(struct dlrt_pf_spec *t, const char *w, bool *mode_given)
{
	const char *eq = strchr(w, '=');

	if (!eq) {
		for (unsigned m = 0; m < 3; m++)
			if (!strcmp(w, mode_names[m])) {
				t->mode = (enum dlrt_pf_mode)m;
				*mode_given = true;
				return true;
			}
		return false;
	}
	if (!strncmp(w, "shm=", 4))
		return dlrt_parse_u32(eq + 1, 0, 1u << 20, &t->shm_mib) == 0;
	if (!strncmp(w, "clock=", 6))
		return dlrt_parse_u32(eq + 1, 1, 3600 * 1000, &t->clock_ms) == 0;
	if (!strncmp(w, "timeout=", 8))
		return dlrt_parse_u32(eq + 1, 2, 300, &t->timeout_s) == 0;
	if (!strncmp(w, "gpudev=", 7)) {
		size_t n = strlen(eq + 1);

		if (eq[1] != '/' || n >= sizeof(t->gpudev) || strpbrk(eq + 1, " \t\n\r%"))
			return false;
		memcpy(t->gpudev, eq + 1, n + 1);
		return true;
	}
	return false;
}

int dlrt_pf_spec_parse(struct dlrt_pf_spec *s, const char *v, const char *what,
		       struct dlrt_err *err)
{
	struct dlrt_pf_spec t = *s;
	bool mode_given = false, keys = false;
	char word[DLRT_PF_SPEC_MAX];

	if (!v || !*v)
		goto bad;
	for (const char *p = v;;) {
		size_t n = strcspn(p, ",");

		if (n == 0 || n >= sizeof(word))
			goto bad;
		memcpy(word, p, n);
		word[n] = '\0';
		if (!apply_word(&t, word, &mode_given))
			goto bad;
		keys |= strchr(word, '=') != NULL;
		if (!p[n])
			break;
		p += n + 1;
	}
	if (keys && !mode_given && t.mode == DLRT_PF_OFF)
		t.mode = DLRT_PF_QUICK;
	*s = t;
	return 0;
bad:
	return dlrt_err_set(err, "%s=%.80s: give off, quick or full, optionally with ,shm=MIB "
			    "(free /dev/shm), ,clock=MS (1-3600000), ,timeout=S (2-300), "
			    ",gpudev=/PATH/PREFIX (man dlrt, PREFLIGHT)", what, v ? v : "");
}

void dlrt_pf_spec_format(const struct dlrt_pf_spec *s, char *out, size_t len)
{
	snprintf(out, len, "%s,shm=%u,clock=%u,timeout=%u,gpudev=%s", dlrt_pf_mode_name(s->mode),
		 s->shm_mib, s->clock_ms, s->timeout_s, s->gpudev);
}

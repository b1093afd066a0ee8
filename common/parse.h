/* parse.h - whole decimal numbers and yes/no words, strictly.
 *
 * Every command line, plugstack.conf key and environment variable dlrt reads
 * a number or a boolean from goes through these two, so "12x", " 3", "-1" and
 * a value past the bound are refused the same way everywhere. They live in
 * the core, not with the options (runtime/opts.h), so that a program that only
 * parses a number links no runtime.
 */
#ifndef DLRT_PARSE_H
#define DLRT_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Parses a whole decimal number in [lo, hi]: no sign, no blank, no suffix.
 * 0 and *out set, or -1 and *out untouched. */
int dlrt_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out);
/* Parses yes/no/true/false/on/off/1/0/y/n, any case. 0 or -1 as above. */
int dlrt_parse_bool(const char *s, bool *out);

#endif

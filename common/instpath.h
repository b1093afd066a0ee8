/* instpath.h - where dlrt's installed files are.
 *
 * One rule for every lookup: the directory compiled in at build time (the
 * install directories of the Makefile, e.g. /usr/libexec/dlrt in the Debian
 * package), and only if the file is not there, the same place relative to the
 * file that is running (the plugin for the services, dlrt-infer
 * for the models). The fallback serves a tree moved as a whole after it was
 * built: the module layout copied to another prefix, or packages extracted
 * into a folder.
 */
#ifndef DLRT_INSTPATH_H
#define DLRT_INSTPATH_H

#include <stddef.h>

#include "dlrt_err.h"

/* Fills `out` with <dir>/<name>, or else <dirname(anchor)>/<rel>/<name>, for
 * the first that exists. `anchor` is the absolute path of the running file.
 * On failure the error names both places tried. */
int dlrt_instpath_find(const char *dir, const char *anchor, const char *rel, const char *name,
		       char *out, size_t len, struct dlrt_err *err);

/* The compiled-in directories and the relative paths of the fallback. */
extern const char dlrt_instpath_pkglibexecdir[], dlrt_instpath_modeldir[],
	dlrt_instpath_plugin_to_pkglibexec[], dlrt_instpath_bin_to_modeldir[],
	dlrt_instpath_bindir[], dlrt_instpath_plugin_to_bin[];

#endif

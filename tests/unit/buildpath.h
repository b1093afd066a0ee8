/* buildpath.h - where a unit test finds a program of the build it belongs to.
 *
 * Tests that run a real dlrt program (the c10d store, the Horovod driver,
 * dlrt-topo) must find the one of their own build folder, whatever BUILD is
 * (`make BUILD=build-deb unit` inside dpkg-buildpackage, a helper's
 * BUILD=build-x): never a fixed "build/". */
#ifndef DLRT_TEST_BUILDPATH_H
#define DLRT_TEST_BUILDPATH_H

#include <stddef.h>

/* Writes the path of $(BUILD)/REL (e.g. "libexec/dlrt-c10d-store") into out:
 * from DLRT_BUILD, else next to DLRT_PLUGIN ($(BUILD)/dlrt.so, as make unit
 * sets it), else relative to the test itself ($(BUILD)/tests/x or
 * $(BUILD)/asan/tests/x). 0 when an executable is there, -1 (out holds the
 * last place tried) otherwise. */
int test_build_program(const char *rel, char *out, size_t len);

/* Writes the build folder that holds REL (found as test_build_program does)
 * into out, for a script that takes BUILD. 0, or -1 when REL is nowhere. */
int test_build_dir(const char *rel, char *out, size_t len);

#endif

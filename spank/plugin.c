/* plugin.c - the one `struct dlrt_plugin` of this process (plugin.h).
 *
 * Every file of the plugin reads it, and the entry points (dispatch.c) call
 * every file: defined there, it made each file depend on the dispatcher and
 * the whole plugin one circle of files. Here it is below all of them.
 * slurm_spank_init fills it first (dispatch.c).
 */
#include "plugin.h"

struct dlrt_plugin dlrt_plugin;

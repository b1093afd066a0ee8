/* pfcheck.h - a node's local preflight checks, run by dlrt-preflight as the
 * job's user on each node of the step (tools/dlrt_preflight_main.c). Each
 * returns 0, or -1 with the figure the user reads after "CHECK: " (one line,
 * pfdecide.h). Nothing here waits on the network; each call is one bounded
 * system call or a few (the device open is O_NONBLOCK).
 */
#ifndef DLRT_PFCHECK_H
#define DLRT_PFCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "pfline.h"

/* gpu: every GPU the step's allocation names (the GPU plan's own parser of
 * CUDA_VISIBLE_DEVICES / SLURM_STEP_GPUS / SLURM_JOB_GPUS) has a device file
 * PREFIX<index> that is a character device and opens for reading. No GPU in
 * the allocation passes. */
int dlrt_pf_check_gpus(const char *cuda_visible, const char *step_gpus, const char *job_gpus,
		       const char *prefix, char *figure, size_t len);
/* mem: MemAvailable of `meminfo` (/proc/meminfo's text) covers req_mib (0:
 * the step asked for none: passes). */
int dlrt_pf_check_mem(const char *meminfo, uint64_t req_mib, char *figure, size_t len);
/* The step's memory per node from Slurm's variables, MiB (0 when unknown). */
uint64_t dlrt_pf_mem_request(const char *mem_per_node, const char *mem_per_cpu,
			     const char *cpus_on_node);
/* shm: `path`'s free space for an unprivileged user is at least min_mib. */
int dlrt_pf_check_shm(const char *path, uint32_t min_mib, char *figure, size_t len);
/* ckpt, first node: writes TOKEN into DIR/NAME (a new file, 0600, no link
 * followed); -1 when the folder is not writable. */
int dlrt_pf_ckpt_write(const char *dir, const char *name, const char *token, char *figure,
		       size_t len);
/* ckpt, the other nodes: whether DIR/NAME holds TOKEN. */
enum dlrt_pf_ckpt dlrt_pf_ckpt_read(const char *dir, const char *name, const char *token);

#endif

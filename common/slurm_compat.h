#ifndef DLRT_SLURM_COMPAT_H
#define DLRT_SLURM_COMPAT_H
/*
 * slurm_compat.h - the libslurm calls whose form changed between Slurm 22.05
 * and 26.05, in the one form dlrt uses, so that one source tree builds
 * warning-free against each release's own <slurm/slurm.h> (the oldest tested
 * is Debian 12's 22.05, the newest Debian unstable's 26.05). Every version
 * test on libslurm's API is here; a difference in Slurm's behaviour is tested
 * where the behaviour is used (spank/requeue.c).
 *
 * 26.05 names a job by a slurm_step_id_t in slurm_load_job and slurm_requeue,
 * and keeps the job-id forms only behind SLURM_BACKWARD_COMPAT, a _Generic
 * crutch for old callers; dlrt calls the new form instead. The id is made as
 * 26.05's own wrappers make it: SLURM_STEP_ID_INITIALIZER (sluid 0, so that
 * slurmctld looks the job up by its id), then the job id.
 */
#include <stdint.h>

#include <slurm/slurm.h>
#include <slurm/slurm_version.h>

#define DLRT_SLURM_AT_LEAST(a, b) (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(a, b, 0))

/* How slurm_load_job and slurm_requeue name the job (the fake SPANK host of the
 * unit tests defines slurm_load_job with it). */
#if DLRT_SLURM_AT_LEAST(26, 5)
typedef slurm_step_id_t dlrt_slurm_job_ref;
#else
typedef uint32_t dlrt_slurm_job_ref;
#endif

/* Slurm 23.02 named the list iterator list_itr_t (a struct, used through a
 * pointer) and 24.11 dropped the old pointer typedef ListIterator. */
#if DLRT_SLURM_AT_LEAST(23, 2)
typedef list_itr_t *dlrt_list_itr;
#else
typedef ListIterator dlrt_list_itr;
#endif

static inline dlrt_slurm_job_ref dlrt_slurm_job(uint32_t job_id)
{
#if DLRT_SLURM_AT_LEAST(26, 5)
	slurm_step_id_t id = SLURM_STEP_ID_INITIALIZER;

	id.job_id = job_id;
	return id;
#else
	return job_id;
#endif
}

/* slurm_load_job: the job's record (free it with slurm_free_job_info_msg). */
static inline int dlrt_slurm_load_job(job_info_msg_t **resp, uint32_t job_id, uint16_t show)
{
	return slurm_load_job(resp, dlrt_slurm_job(job_id), show);
}

/* slurm_requeue: requeue a running batch job (flags: 0 or JOB_REQUEUE_HOLD...). */
static inline int dlrt_slurm_requeue(uint32_t job_id, uint32_t flags)
{
	return slurm_requeue(dlrt_slurm_job(job_id), flags);
}

/* slurm_signal_job_step: a signal to every task of one step; 25.11 takes the
 * step by a slurm_step_id_t pointer. */
static inline int dlrt_slurm_signal_step(uint32_t job_id, uint32_t step_id, uint16_t sig)
{
#if DLRT_SLURM_AT_LEAST(25, 11)
	slurm_step_id_t id = {
		.job_id = job_id, .step_het_comp = NO_VAL, .step_id = step_id,
	};

	return slurm_signal_job_step(&id, sig);
#else
	return slurm_signal_job_step(job_id, step_id, sig);
#endif
}

/* slurm_load_ctl_conf's answer is freed by slurm_free_conf since 26.05
 * (slurm_free_ctl_conf before: SchedMD renamed it). */
static inline void dlrt_slurm_free_conf(slurm_conf_t *conf)
{
#if DLRT_SLURM_AT_LEAST(26, 5)
	slurm_free_conf(conf);
#else
	slurm_free_ctl_conf(conf);
#endif
}

#endif

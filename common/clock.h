/* clock.h - dlrt's one clock for deadlines and timeouts.
 *
 * Every bounded wait in dlrt (services, slurmstepd's children, the plugin's
 * loops) measures time with this monotonic clock: a wall-clock step (NTP, an
 * admin's `date`) must neither end a wait early nor make it last forever.
 */
#ifndef DLRT_CLOCK_H
#define DLRT_CLOCK_H

#include <stdint.h>

/* The monotonic clock (CLOCK_MONOTONIC; async-signal-safe) in milliseconds,
 * microseconds (durations people read: --dl-verbose, the inference timeline)
 * and nanoseconds (rates measured over short intervals). */
int64_t dlrt_now_ms(void);
int64_t dlrt_now_us(void);
int64_t dlrt_now_ns(void);

#endif

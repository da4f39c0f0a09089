/* Small helpers shared by the benchmark programs: a clock, percentiles and
 * the resident set size of a process. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stddef.h>
#include <sys/types.h>

/* Monotonic time in microseconds. */
double bench_now_us(void);

/* Sorts n values in place, ascending. */
void bench_sort(double *values, size_t n);

/* The p-th percentile (0..100) of n sorted values (nearest rank); 0 when
 * n is 0. */
double bench_percentile(const double *sorted, long n, double p);

/* VmRSS of process `pid` (0: this process) in KiB, or -1. */
long bench_rss_kb(pid_t pid);

/* The anonymous part of that RSS (heap, stacks: what the process
 * allocated, without the pages of the shared libraries it maps) in KiB,
 * or -1. */
long bench_anon_kb(pid_t pid);

#endif

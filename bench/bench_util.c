#define _POSIX_C_SOURCE 200809L
#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_sort(double *values, size_t n)
{
    qsort(values, n, sizeof *values, compare_doubles);
}

double bench_percentile(const double *sorted, long n, double p)
{
    if (n <= 0)
        return 0;
    long rank = (long)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    return sorted[(rank > n ? n : rank) - 1];
}

/* Sums the fields named in `keys` (NULL-terminated) of /proc/PID/FILE. */
static long proc_sum_kb(pid_t pid, const char *file, const char *const *keys)
{
    char path[64], line[256];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, file);
    else
        snprintf(path, sizeof path, "/proc/self/%s", file);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kb = -1;
    while (fgets(line, sizeof line, f))
        for (const char *const *k = keys; *k; k++)
            if (strncmp(line, *k, strlen(*k)) == 0)
                kb = (kb < 0 ? 0 : kb) + atol(line + strlen(*k));
    fclose(f);
    return kb;
}

long bench_rss_kb(pid_t pid)
{
    static const char *const keys[] = {"VmRSS:", NULL};
    return proc_sum_kb(pid, "status", keys);
}

long bench_anon_kb(pid_t pid)
{
    static const char *const keys[] = {"Anonymous:", NULL};
    return proc_sum_kb(pid, "smaps_rollup", keys);
}

/* Is a thread blocked? (thread_state.h) */
#include "thread_state.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool mcp_thread_blocked(pid_t tid)
{
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true;
    ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    if (n <= 0)
        return true;
    stat[n] = '\0';
    /* The state follows the command name, which is in parentheses and may
     * hold any character, a ')' included: the last one ends it. */
    const char *paren = strrchr(stat, ')');
    return !paren || paren[1] != ' ' || paren[2] != 'R';
}

int mcp_cpus_usable(void)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    return n > 0 ? n : 1;
}

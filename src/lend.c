/* The calling thread's lender (lend.h): the one definition. */
#include "lend.h"

#include <stddef.h>

_Thread_local mcp_lender_t *mcp_thread_lender = NULL;

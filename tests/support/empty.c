/* Keeps the support library non-empty before any helper exists. */
typedef int mcp_test_support_placeholder_t;

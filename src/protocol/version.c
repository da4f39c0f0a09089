/* Protocol revisions, their eras, and version choice (digest section 1). */
#include <string.h>

#include "mcp/version.h"

/* Newest first, so the modern revisions form a prefix and the legacy ones
 * the rest: the two subsets below are slices of this one table. */
static const char *const known_versions[] = {
    MCP_PROTOCOL_2026_07_28,
    MCP_PROTOCOL_2025_11_25,
    MCP_PROTOCOL_2025_06_18,
    MCP_PROTOCOL_2025_03_26,
};

enum { N_KNOWN = sizeof known_versions / sizeof known_versions[0] };

/* The first revision of the modern era: every later date is modern too. */
static const char first_modern_date[] = "2026-07-28";

static size_t count_modern(void)
{
    size_t n = 0;
    while (n < N_KNOWN && mcp_version_era(known_versions[n]) == MCP_ERA_MODERN)
        n++;
    return n;
}

const char *const *mcp_protocol_versions(size_t *n)
{
    if (n)
        *n = N_KNOWN;
    return known_versions;
}

const char *const *mcp_protocol_versions_modern(size_t *n)
{
    if (n)
        *n = count_modern();
    return known_versions;
}

const char *const *mcp_protocol_versions_legacy(size_t *n)
{
    size_t modern = count_modern();
    if (n)
        *n = N_KNOWN - modern;
    return known_versions + modern;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int two_digits(const char *s)
{
    return (s[0] - '0') * 10 + (s[1] - '0');
}

static bool is_leap_year(int year)
{
    return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

static int days_in_month(int year, int month)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return month == 2 && is_leap_year(year) ? 29 : days[month - 1];
}

/* Exactly "YYYY-MM-DD" with ASCII digits naming a real day of the
 * Gregorian calendar. */
static bool is_calendar_date(const char *s)
{
    static const char shape[] = "dddd-dd-dd";
    for (size_t i = 0; i < sizeof shape - 1; i++) {
        bool ok = shape[i] == 'd' ? is_digit(s[i]) : s[i] == shape[i];
        if (!ok) /* also stops at a NUL terminator before the end */
            return false;
    }
    if (s[sizeof shape - 1] != '\0')
        return false;

    int year = two_digits(s) * 100 + two_digits(s + 2);
    int month = two_digits(s + 5);
    int day = two_digits(s + 8);
    return month >= 1 && month <= 12 && day >= 1 && day <= days_in_month(year, month);
}

mcp_era_t mcp_version_era(const char *version)
{
    if (!version || !is_calendar_date(version))
        return MCP_ERA_UNKNOWN;
    /* Fixed-width dates order like strings. */
    return strcmp(version, first_modern_date) >= 0 ? MCP_ERA_MODERN : MCP_ERA_LEGACY;
}

bool mcp_version_is_supported(const char *version)
{
    if (!version)
        return false;
    for (size_t i = 0; i < N_KNOWN; i++)
        if (strcmp(version, known_versions[i]) == 0)
            return true;
    return false;
}

static bool list_contains(const char *const *list, size_t n, const char *version)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] && strcmp(list[i], version) == 0)
            return true;
    return false;
}

const char *mcp_version_pick(const char *const *server_supported, size_t n_server,
                             const char *const *client_pref, size_t n_client)
{
    if (!server_supported || !client_pref)
        return NULL;
    for (size_t i = 0; i < n_client; i++)
        if (client_pref[i] && list_contains(server_supported, n_server, client_pref[i]))
            return client_pref[i];
    return NULL;
}

/* Compares lengths too: a JSON string may hold a NUL ("2026-07-28\u0000x")
 * that strcmp would stop at. */
static bool json_list_contains(const json_t *list, const char *version)
{
    size_t i, len = strlen(version);
    json_t *entry;
    json_array_foreach(list, i, entry) {
        if (json_is_string(entry) && json_string_length(entry) == len &&
            memcmp(json_string_value(entry), version, len) == 0)
            return true;
    }
    return false;
}

const char *mcp_version_pick_json(const json_t *server_supported,
                                  const char *const *client_pref, size_t n_client)
{
    if (!json_is_array(server_supported) || !client_pref)
        return NULL;
    for (size_t i = 0; i < n_client; i++)
        if (client_pref[i] && json_list_contains(server_supported, client_pref[i]))
            return client_pref[i];
    return NULL;
}

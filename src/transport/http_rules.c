/*
 * HTTP-level rules of the endpoint: Accept, Content-Type, path,
 * Content-Length, and the Host / Origin guards against DNS rebinding
 * (digest sections 4.2 and 4.8).
 */
#include <string.h>
#include <strings.h>

#include "protocol/headers_internal.h"
#include "transport/http_rules.h"

/* RFC 9110 tchar: the characters of a token. */
static bool is_tchar(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
        return true;
    default:
        return false;
    }
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* Does s[0..n) equal the NUL-terminated `word`, ignoring ASCII case? */
static bool span_equals(const char *s, size_t n, const char *word)
{
    if (strlen(word) != n) /* most words are literals: a constant */
        return false;
    for (size_t i = 0; i < n; i++)
        if (!mcp_ascii_same_nocase((unsigned char)s[i], (unsigned char)word[i]))
            return false;
    return true;
}

/* ------------------------------------------------------------------------
 * Accept
 * ------------------------------------------------------------------------ */

/* The q of the most specific media range seen so far for one target type:
 * level 2 = type/subtype, 1 = type / *, 0 = * / *, -1 = none matched. */
typedef struct accept_match {
    int level;
    int q; /* thousandths */
} accept_match_t;

static void accept_consider(accept_match_t *m, int level, int q)
{
    if (level > m->level) {
        m->level = level;
        m->q = q;
    } else if (level == m->level && q > m->q) {
        m->q = q;
    }
}

/* RFC 9110 qvalue: "0" ["." 0*3DIGIT] / "1" ["." 0*3("0")], in
 * thousandths; -1 when malformed. */
static int parse_qvalue(const char *s, size_t n)
{
    if (n == 0 || (s[0] != '0' && s[0] != '1'))
        return -1;
    int q = (s[0] - '0') * 1000;
    if (n == 1)
        return q;
    if (s[1] != '.' || n > 5)
        return -1;
    int scale = 100;
    for (size_t i = 2; i < n; i++, scale /= 10) {
        if (s[i] < '0' || s[i] > '9' || (q == 1000 && s[i] != '0'))
            return -1;
        q += (s[i] - '0') * scale;
    }
    return q;
}

static size_t token_len(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && is_tchar(s[i]))
        i++;
    return i;
}

/* Length of a quoted-string at s (which starts with '"'), or 0 when it is
 * not closed. */
static size_t quoted_len(const char *s, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return 0;
}

/* One element of the Accept list: media-range *( OWS ";" OWS parameter ).
 * Updates the matches; a malformed element is ignored. */
static void accept_element(const char *s, size_t n, accept_match_t *json, accept_match_t *sse)
{
    size_t type_n = token_len(s, n);
    if (type_n == 0 || type_n == n || s[type_n] != '/')
        return;
    const char *sub = s + type_n + 1;
    size_t rest = n - type_n - 1;
    size_t sub_n = token_len(sub, rest);
    if (sub_n == 0)
        return;
    const char *p = sub + sub_n;
    const char *end = s + n;
    int q = 1000;
    while (p < end) {
        while (p < end && is_ows(*p))
            p++;
        if (p == end)
            break;
        if (*p++ != ';')
            return;
        while (p < end && is_ows(*p))
            p++;
        size_t name_n = token_len(p, (size_t)(end - p));
        if (name_n == 0 || p + name_n == end || p[name_n] != '=')
            return;
        const char *name = p;
        const char *value = p + name_n + 1;
        size_t value_n = value < end && *value == '"' ? quoted_len(value, (size_t)(end - value))
                                                      : token_len(value, (size_t)(end - value));
        if (value_n == 0)
            return;
        if (span_equals(name, name_n, "q") && (q = parse_qvalue(value, value_n)) < 0)
            return;
        p = value + value_n;
    }

    bool any_type = span_equals(s, type_n, "*");
    bool any_sub = span_equals(sub, sub_n, "*");
    if (any_type && !any_sub)
        return; /* "* / json" is not a media range */
    if (any_type) {
        accept_consider(json, 0, q);
        accept_consider(sse, 0, q);
    } else if (span_equals(s, type_n, "application")) {
        if (any_sub || span_equals(sub, sub_n, "json"))
            accept_consider(json, any_sub ? 1 : 2, q);
    } else if (span_equals(s, type_n, "text")) {
        if (any_sub || span_equals(sub, sub_n, "event-stream"))
            accept_consider(sse, any_sub ? 1 : 2, q);
    }
}

void http_accept_read(const mcp_headers_t *headers, http_accept_t *out)
{
    /* What the spec has every client send, read once per request: known
     * without parsing it. */
    static const char both[] = "application/json, text/event-stream";
    size_t count;
    const char *only = mcp_headers_lookup(headers, "Accept", &count);
    if (count == 1 && strcmp(only, both) == 0) {
        out->json = out->sse = true;
        return;
    }

    accept_match_t json = {-1, 0}, sse = {-1, 0};
    bool any_element = false;
    for (size_t i = 0; headers && i < headers->count; i++) {
        const mcp_header_t *h = &headers->items[i];
        if (!h->name || !mcp_header_name_is(h->name, "Accept") || !h->value)
            continue;
        const char *s = h->value;
        while (*s) {
            /* One list element: up to a comma outside quotes. */
            const char *e = s;
            while (*e && *e != ',') {
                if (*e == '"') {
                    size_t q = quoted_len(e, strlen(e));
                    e += q ? q : strlen(e);
                } else {
                    e++;
                }
            }
            const char *a = s, *b = e;
            while (a < b && is_ows(*a))
                a++;
            while (b > a && is_ows(b[-1]))
                b--;
            if (a < b) {
                any_element = true;
                accept_element(a, (size_t)(b - a), &json, &sse);
            }
            s = *e ? e + 1 : e;
        }
    }
    if (!any_element) {
        out->json = out->sse = true; /* no preference stated */
        return;
    }
    out->json = json.level >= 0 && json.q > 0;
    out->sse = sse.level >= 0 && sse.q > 0;
}

/* ------------------------------------------------------------------------
 * Content-Type, path, Content-Length
 * ------------------------------------------------------------------------ */

bool http_content_type_is_json(const mcp_headers_t *headers)
{
    size_t count;
    const char *value = mcp_headers_lookup(headers, "Content-Type", &count);
    if (count != 1)
        return false;
    const char *start;
    size_t len;
    mcp_header_trim(value, &start, &len);
    const char *semi = memchr(start, ';', len);
    if (semi)
        len = (size_t)(semi - start);
    while (len > 0 && is_ows(start[len - 1]))
        len--;
    return span_equals(start, len, "application/json");
}

bool http_path_matches(const char *target, const char *path)
{
    if (!target || !path)
        return false;
    size_t n = strcspn(target, "?#");
    return strlen(path) == n && strncmp(target, path, n) == 0;
}

bool http_content_length(const mcp_headers_t *headers, uint64_t *out)
{
    size_t count;
    const char *value = mcp_headers_lookup(headers, "Content-Length", &count);
    if (count != 1)
        return false;
    const char *s;
    size_t len;
    mcp_header_trim(value, &s, &len);
    if (len == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t digit = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return false; /* would overflow */
        v = v * 10 + digit;
    }
    *out = v;
    return true;
}

/* ------------------------------------------------------------------------
 * Host and Origin
 * ------------------------------------------------------------------------ */

/*
 * Splits a Host value into its name (s[0..*name_len)) and checks the rest
 * is empty or ":" and 1-5 digits. An IPv6 literal keeps its brackets.
 * Returns false when the value has no such shape.
 */
static bool host_split(const char *s, size_t n, size_t *name_len, bool *has_port)
{
    size_t i;
    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close)
            return false;
        i = (size_t)(close - s) + 1;
    } else {
        i = 0;
        while (i < n && s[i] != ':')
            i++;
    }
    if (i == 0)
        return false;
    *name_len = i;
    *has_port = i < n;
    if (i == n)
        return true;
    if (s[i] != ':' || n - i - 1 == 0 || n - i - 1 > 5)
        return false;
    for (size_t k = i + 1; k < n; k++)
        if (s[k] < '0' || s[k] > '9')
            return false;
    return true;
}

static bool host_span_is_loopback(const char *s, size_t n)
{
    size_t name_len;
    bool has_port;
    if (!host_split(s, n, &name_len, &has_port))
        return false;
    return span_equals(s, name_len, "localhost") || span_equals(s, name_len, "127.0.0.1") ||
           span_equals(s, name_len, "[::1]");
}

bool http_host_is_loopback(const char *host)
{
    const char *s;
    size_t n;
    mcp_header_trim(host, &s, &n);
    return host_span_is_loopback(s, n);
}

/* Does the Host value s[0..n) match the allow-list entry? */
static bool host_entry_matches(const char *s, size_t n, const char *entry)
{
    if (strcmp(entry, "*") == 0)
        return true;
    size_t name_len, entry_name_len;
    bool has_port, entry_has_port;
    if (!host_split(s, n, &name_len, &has_port) ||
        !host_split(entry, strlen(entry), &entry_name_len, &entry_has_port))
        return false;
    if (entry_has_port)
        return span_equals(s, n, entry);
    return name_len == entry_name_len && strncasecmp(s, entry, name_len) == 0;
}

/* How many `name` headers there are (0, 1, or 2 for "more than one"); with
 * exactly one, its trimmed value in *s, *n. A request may name its Host
 * and Origin at most once: two are an attempt to confuse the check. */
static int single_header(const mcp_headers_t *headers, const char *name, const char **s,
                         size_t *n)
{
    size_t count;
    const char *value = mcp_headers_lookup(headers, name, &count);
    if (count == 1)
        mcp_header_trim(value, s, n);
    return count > 1 ? 2 : (int)count;
}

bool http_host_allowed(const mcp_headers_t *headers, const char *const *allowed)
{
    const char *s;
    size_t n;
    int count = single_header(headers, "Host", &s, &n);
    if (count != 1)
        return count == 0;
    if (host_span_is_loopback(s, n))
        return true;
    for (size_t i = 0; allowed && allowed[i]; i++)
        if (host_entry_matches(s, n, allowed[i]))
            return true;
    return false;
}

static bool origin_is_loopback(const char *s, size_t n)
{
    static const char *const schemes[] = {"http://", "https://"};
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t k = strlen(schemes[i]);
        if (n > k && strncasecmp(s, schemes[i], k) == 0)
            return host_span_is_loopback(s + k, n - k);
    }
    return false;
}

bool http_origin_allowed(const mcp_headers_t *headers, const char *const *allowed)
{
    const char *s;
    size_t n;
    int count = single_header(headers, "Origin", &s, &n);
    if (count != 1)
        return count == 0;
    if (origin_is_loopback(s, n))
        return true;
    for (size_t i = 0; allowed && allowed[i]; i++)
        if (strcmp(allowed[i], "*") == 0 || span_equals(s, n, allowed[i]))
            return true;
    return false;
}

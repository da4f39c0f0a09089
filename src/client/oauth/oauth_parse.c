/*
 * The pure pieces of the OAuth client (oauth_parse.h): the WWW-Authenticate
 * challenge, discovery URLs, the resource identifier, form encoding, PKCE.
 *
 * Everything here reads bytes a peer chose, so the parsers are written out
 * by hand against their grammars (RFC 9110 §11.6.1, RFC 3986 §3) rather
 * than borrowed from libcurl, which this module must not need loaded.
 * Character classes are ASCII tables of our own: <ctype.h> follows the
 * locale, and a URL or a header does not.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client/oauth/oauth_parse.h"
#include "client/sha256.h"
#include "protocol/base64.h"
#include "protocol/hex.h"
#include "random.h"

/* ------------------------------------------------------------------------
 * ASCII
 * ------------------------------------------------------------------------ */

static bool is_alpha(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Whether the `n` bytes at `s` equal the NUL-terminated `word`, ignoring
 * ASCII case. */
static bool span_equals_nocase(const char *s, size_t n, const char *word)
{
    for (size_t i = 0; i < n; i++)
        if (word[i] == '\0' || ascii_lower(s[i]) != ascii_lower(word[i]))
            return false;
    return word[n] == '\0';
}

/* Whether `s` starts with "%" and two hex digits. */
static bool is_pct_escape(const char *s)
{
    return s[0] == '%' && mcp_hex_digit((unsigned char)s[1]) >= 0 &&
           mcp_hex_digit((unsigned char)s[2]) >= 0;
}

/* ------------------------------------------------------------------------
 * WWW-Authenticate (RFC 9110 §11.6.1)
 *
 *   challenge  = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
 *   auth-param = token BWS "=" BWS ( token / quoted-string )
 *
 * The challenges and their parameters share one comma-separated list, so
 * an item after a comma is a parameter when it reads `token BWS "="`, and
 * a new challenge otherwise (a scheme is never followed by "=").
 * ------------------------------------------------------------------------ */

static bool is_tchar(unsigned char c)
{
    return is_alpha(c) || is_digit(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_token68_char(unsigned char c)
{
    return is_alpha(c) || is_digit(c) || (c != '\0' && strchr("-._~+/", c));
}

static size_t token_len(const char *s)
{
    size_t n = 0;
    while (is_tchar((unsigned char)s[n]))
        n++;
    return n;
}

/* A bare parameter value: RFC 9110 says a token, but servers send ":" and
 * "/" unquoted (`scope=mcp:read`, URLs), and a client gains nothing by
 * refusing them. Visible ASCII, but the list's "," and a quote, and not
 * starting with "=" (`abc==def` stays malformed, not abc set to "=def"). */
static size_t bare_value_len(const char *s)
{
    size_t n = 0;
    if (*s == '=')
        return 0;
    while (s[n] > 0x20 && s[n] < 0x7f && s[n] != ',' && s[n] != '"')
        n++;
    return n;
}

static size_t whitespace_len(const char *s)
{
    size_t n = 0;
    while (s[n] == ' ' || s[n] == '\t')
        n++;
    return n;
}

/* Empty list elements are allowed (RFC 9110 §5.6.1.2): skips "," and
 * whitespace. */
static const char *skip_separators(const char *s)
{
    while (*s == ',' || *s == ' ' || *s == '\t')
        s++;
    return s;
}

/* Whether the text at `s` ends a list item: whitespace, then "," or the
 * end of the value. */
static bool at_item_end(const char *s)
{
    s += whitespace_len(s);
    return *s == '\0' || *s == ',';
}

/* The length of the quoted-string at `s` (starting at its '"'), quotes
 * included, or 0 when it is unterminated or holds a control character. */
static size_t quoted_string_len(const char *s)
{
    size_t i = 1;
    for (;;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            return i + 1;
        if (c == '\\') {
            c = (unsigned char)s[i + 1];
            i++;
        }
        /* A character, or the one a '\' escapes: HTAB, SP, VCHAR or
         * obs-text alike. Any other control character is refused, and so
         * is the NUL that ends an unterminated string. */
        if (c != '\t' && (c < 0x20 || c == 0x7f))
            return 0;
        i++;
    }
}

/* A copy of the quoted-string `s` of `len` bytes with its quotes dropped
 * and its escapes undone. */
static char *unquote(const char *s, size_t len)
{
    char *copy = malloc(len), *w = copy;
    if (!copy)
        return NULL;
    for (size_t i = 1; i < len - 1; i++) {
        if (s[i] == '\\')
            i++;
        *w++ = s[i];
    }
    *w = '\0';
    return copy;
}

/* Where a Bearer parameter goes, or NULL when it is not one we keep. */
static char **bearer_slot(oauth_challenge_t *c, const char *name, size_t len)
{
    if (span_equals_nocase(name, len, "resource_metadata"))
        return &c->resource_metadata;
    if (span_equals_nocase(name, len, "scope"))
        return &c->scope;
    if (span_equals_nocase(name, len, "error"))
        return &c->error;
    if (span_equals_nocase(name, len, "error_description"))
        return &c->error_description;
    return NULL;
}

/* Whether the list item at `s` is an auth-param rather than a challenge. */
static bool item_is_param(const char *s)
{
    size_t n = token_len(s);
    return n > 0 && s[n + whitespace_len(s + n)] == '=';
}

/*
 * Parses the auth-param at *s, which must fill its list item, and moves
 * past it. When `into` is given (the first Bearer challenge), a parameter
 * it keeps is stored there unless an earlier one was.
 */
static int parse_param(const char **s, oauth_challenge_t *into)
{
    const char *name = *s, *p = *s;
    size_t name_len = token_len(p);
    if (name_len == 0)
        return MCP_EPROTO;
    p += name_len;
    p += whitespace_len(p);
    if (*p != '=')
        return MCP_EPROTO;
    p++;
    p += whitespace_len(p);

    const char *value = p;
    bool quoted = *p == '"';
    size_t value_len = quoted ? quoted_string_len(p) : bare_value_len(p);
    if (value_len == 0 || !at_item_end(p + value_len))
        return MCP_EPROTO;
    *s = p + value_len;

    char **slot = into ? bearer_slot(into, name, name_len) : NULL;
    if (!slot || *slot)
        return MCP_OK;
    *slot = quoted ? unquote(value, value_len) : strndup(value, value_len);
    return *slot ? MCP_OK : MCP_ENOMEM;
}

/*
 * Parses the challenge at *s (its scheme first) and moves past it, to the
 * end of the value or to the comma before the next challenge. `bearer`
 * receives its parameters when it is the first Bearer or DPoP challenge.
 */
static int parse_challenge(const char **s, oauth_challenge_t *bearer, bool *bearer_seen)
{
    const char *p = *s;
    size_t scheme_len = token_len(p);
    if (scheme_len == 0)
        return MCP_EPROTO;
    bool is_dpop = span_equals_nocase(p, scheme_len, "dpop");
    bool is_bearer = is_dpop || span_equals_nocase(p, scheme_len, "bearer");
    oauth_challenge_t *into = is_bearer && !*bearer_seen ? bearer : NULL;
    if (into)
        into->dpop = is_dpop;
    *bearer_seen |= is_bearer;
    p += scheme_len;

    if (!at_item_end(p)) {
        size_t gap = whitespace_len(p);
        if (gap == 0)
            return MCP_EPROTO;
        p += gap;
        /* token68: one run of token68 characters and trailing "=" filling
         * the item. Bearer never takes one (RFC 6750 §3), nor DPoP (RFC
         * 9449 §7.1): "Bearer scope="
         * is a parameter without its value, not a token. */
        size_t t68 = 0;
        while (is_token68_char((unsigned char)p[t68]))
            t68++;
        while (t68 > 0 && p[t68] == '=')
            t68++;
        if (t68 > 0 && at_item_end(p + t68)) {
            if (is_bearer)
                return MCP_EPROTO;
            *s = p + t68;
            return MCP_OK;
        }
        int rc = parse_param(&p, into);
        if (rc != MCP_OK)
            return rc;
    }
    /* More parameters: the items after commas that read `token "="`. */
    for (;;) {
        p += whitespace_len(p);
        const char *next = skip_separators(p);
        if (*p != ',' || !item_is_param(next)) {
            *s = p;
            return MCP_OK;
        }
        p = next;
        int rc = parse_param(&p, into);
        if (rc != MCP_OK)
            return rc;
    }
}

int oauth_challenge_parse(const char *value, oauth_challenge_t *out)
{
    memset(out, 0, sizeof *out);
    if (!value)
        return MCP_ENOTFOUND;

    oauth_challenge_t found = {0};
    bool bearer_seen = false;
    const char *p = skip_separators(value);
    while (*p != '\0') {
        int rc = parse_challenge(&p, &found, &bearer_seen);
        if (rc != MCP_OK) {
            oauth_challenge_free(&found);
            return rc;
        }
        p = skip_separators(p);
    }
    if (!bearer_seen)
        return MCP_ENOTFOUND;
    *out = found;
    return MCP_OK;
}

void oauth_challenge_free(oauth_challenge_t *c)
{
    if (!c)
        return;
    free(c->resource_metadata);
    free(c->scope);
    free(c->error);
    free(c->error_description);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------------
 * URLs (RFC 3986 §3, narrowed to absolute http and https URLs)
 * ------------------------------------------------------------------------ */

/* An absolute http(s) URL, as spans of the text it was parsed from. */
typedef struct {
    bool https;
    const char *host; /* brackets included for IPv6 */
    size_t host_len;
    unsigned port; /* the one given, or the scheme's default */
    const char *path; /* "" or starting with "/" */
    size_t path_len;
    bool has_query;
    bool has_fragment;
} url_t;

static unsigned default_port(bool https)
{
    return https ? 443 : 80;
}

static bool is_unreserved(unsigned char c)
{
    return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* pchar minus pct-encoded (RFC 3986 §3.3), which callers check apart. */
static bool is_pchar(unsigned char c)
{
    return is_unreserved(c) || (c != '\0' && strchr("!$&'()*+,;=:@", c));
}

/* Whether the `len` bytes at `s` are path (`extra` "/") or query and
 * fragment (`extra` "/?") characters, escapes well-formed. */
static bool part_is_valid(const char *s, size_t len, const char *extra)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (len - i < 3 || !is_pct_escape(s + i))
                return false;
            i += 2;
        } else if (!is_pchar(c) && !strchr(extra, c)) {
            return false;
        }
    }
    return true;
}

/* Whether a path segment is "." or "..", any dot written as %2E. */
static bool is_dot_segment(const char *s, size_t len)
{
    size_t dots = 0;
    for (size_t i = 0; i < len; dots++) {
        if (s[i] == '.')
            i++;
        else if (len - i >= 3 && s[i] == '%' && s[i + 1] == '2' && ascii_lower(s[i + 2]) == 'e')
            i += 3;
        else
            return false;
    }
    return dots == 1 || dots == 2;
}

static bool path_has_dot_segment(const char *path, size_t len)
{
    for (size_t i = 0; i < len;) {
        i++; /* the "/" */
        size_t seg = i;
        while (i < len && path[i] != '/')
            i++;
        if (is_dot_segment(path + seg, i - seg))
            return true;
    }
    return false;
}

/* An IPv6 literal's inside: hex digits, ":" and "." (an IPv4 tail). The
 * address itself is the resolver's to judge; these characters are enough
 * to keep the URLs built from it well-formed. */
static bool ipv6_literal_is_valid(const char *s, size_t len)
{
    if (len == 0 || !memchr(s, ':', len))
        return false;
    for (size_t i = 0; i < len; i++)
        if (mcp_hex_digit((unsigned char)s[i]) < 0 && s[i] != ':' && s[i] != '.')
            return false;
    return true;
}

/* Parses ":" port at `s` (`len` bytes, the colon included). */
static bool parse_port(const char *s, size_t len, unsigned *port)
{
    if (len < 2 || len > 6 || s[0] != ':')
        return false;
    unsigned value = 0;
    for (size_t i = 1; i < len; i++) {
        if (!is_digit((unsigned char)s[i]))
            return false;
        value = value * 10 + (unsigned)(s[i] - '0');
    }
    if (value > 65535)
        return false;
    *port = value;
    return true;
}

/* Parses authority = host [":" port], userinfo refused. */
static bool parse_authority(const char *s, size_t len, url_t *u)
{
    if (memchr(s, '@', len))
        return false;
    size_t host_len;
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close || !ipv6_literal_is_valid(s + 1, (size_t)(close - s) - 1))
            return false;
        host_len = (size_t)(close - s) + 1;
    } else {
        host_len = 0;
        while (host_len < len && is_unreserved((unsigned char)s[host_len]))
            host_len++;
        if (host_len == 0)
            return false;
    }
    u->host = s;
    u->host_len = host_len;
    u->port = default_port(u->https);
    return host_len == len || parse_port(s + host_len, len - host_len, &u->port);
}

static bool parse_url(const char *text, url_t *u)
{
    memset(u, 0, sizeof *u);
    const char *p = text;
    /* The comparison stops at a NUL, which matches no letter. */
    if (span_equals_nocase(p, 8, "https://")) {
        u->https = true;
        p += 8;
    } else if (span_equals_nocase(p, 7, "http://")) {
        p += 7;
    } else {
        return false;
    }

    size_t authority_len = strcspn(p, "/?#");
    if (!parse_authority(p, authority_len, u))
        return false;
    p += authority_len;

    u->path = p;
    u->path_len = strcspn(p, "?#");
    if (!part_is_valid(p, u->path_len, "/") || path_has_dot_segment(p, u->path_len))
        return false;
    p += u->path_len;

    u->has_query = *p == '?';
    u->has_fragment = strchr(p, '#') != NULL;
    if (u->has_query) {
        size_t query_len = strcspn(p + 1, "#");
        if (!part_is_valid(p + 1, query_len, "/?"))
            return false;
        p += 1 + query_len;
    }
    return *p == '\0' || part_is_valid(p + 1, strlen(p + 1), "/?");
}

/* The path without its trailing "/"s: "" for "/" and "//", "/a" for
 * "/a/". All of them, not one: with one, "https://a//" would cover
 * "https://a/" but not "https://a/x", which "https://a/" covers, and
 * coverage must be transitive (a token for a resource is good for what
 * it covers, and for what that covers). */
static size_t path_len_trimmed(const url_t *u)
{
    size_t len = u->path_len;
    while (len > 0 && u->path[len - 1] == '/')
        len--;
    return len;
}

/* A formatted, malloc'd string, or NULL. */
static char *format_new(const char *fmt, ...) MCP_PRINTF(1, 2);
static char *format_new(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text;
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : text;
}

/* "scheme://host[:port]", lowercased, the default port left out. */
static char *origin_new(const url_t *u)
{
    char port[sizeof ":4294967295"] = "";
    if (u->port != default_port(u->https))
        snprintf(port, sizeof port, ":%u", u->port);
    const char *scheme = u->https ? "https://" : "http://";
    char *origin = format_new("%s%.*s%s", scheme, (int)u->host_len, u->host, port);
    if (origin)
        for (char *c = origin + strlen(scheme); *c != '\0'; c++)
            *c = ascii_lower(*c);
    return origin;
}

int oauth_origin(const char *url, char **out)
{
    *out = NULL;
    url_t u;
    if (!url || !parse_url(url, &u))
        return MCP_EINVAL;
    return (*out = origin_new(&u)) ? MCP_OK : MCP_ENOMEM;
}

/* Whether all `n` URLs were built; if not, frees them. */
static bool all_built(char **urls, size_t n)
{
    bool built = true;
    for (size_t i = 0; i < n; i++)
        built = built && urls[i];
    for (size_t i = 0; i < n && !built; i++) {
        free(urls[i]);
        urls[i] = NULL;
    }
    return built;
}

int oauth_prm_urls(const char *server_url, char *out[2], size_t *n)
{
    out[0] = out[1] = NULL;
    *n = 0;
    url_t u;
    if (!parse_url(server_url, &u))
        return MCP_EINVAL;
    char *origin = origin_new(&u);
    if (!origin)
        return MCP_ENOMEM;

    /* RFC 9728 §3.1 inserts the well-known name between the host and the
     * path; a trailing "/" is dropped first, as the reference SDK does. */
    int len = (int)path_len_trimmed(&u);
    size_t count = 0;
    if (len > 0)
        out[count++] = format_new("%s/.well-known/oauth-protected-resource%.*s", origin, len,
                                  u.path);
    out[count++] = format_new("%s/.well-known/oauth-protected-resource", origin);
    free(origin);
    if (!all_built(out, count))
        return MCP_ENOMEM;
    *n = count;
    return MCP_OK;
}

int oauth_as_metadata_urls(const char *issuer, char *out[3], size_t *n)
{
    out[0] = out[1] = out[2] = NULL;
    *n = 0;
    url_t u;
    if (!parse_url(issuer, &u) || u.has_query || u.has_fragment)
        return MCP_EINVAL;
    char *origin = origin_new(&u);
    if (!origin)
        return MCP_ENOMEM;

    int len = (int)path_len_trimmed(&u);
    out[0] = format_new("%s/.well-known/oauth-authorization-server%.*s", origin, len, u.path);
    out[1] = format_new("%s/.well-known/openid-configuration%.*s", origin, len, u.path);
    size_t count = 2;
    if (len > 0) /* OpenID Connect appends its suffix to the path instead */
        out[count++] = format_new("%s%.*s/.well-known/openid-configuration", origin, len, u.path);
    free(origin);
    if (!all_built(out, count))
        return MCP_ENOMEM;
    *n = count;
    return MCP_OK;
}

int oauth_canonical_resource(const char *server_url, char **out)
{
    url_t u;
    if (!parse_url(server_url, &u)) {
        *out = NULL;
        return MCP_EINVAL;
    }
    char *origin = origin_new(&u);
    int len = u.path_len == 1 ? 0 : (int)u.path_len; /* a lone "/" is dropped */
    *out = origin ? format_new("%s%.*s", origin, len, u.path) : NULL;
    free(origin);
    return *out ? MCP_OK : MCP_ENOMEM;
}

bool oauth_resource_allows(const char *resource, const char *server_url)
{
    url_t r, s;
    if (!parse_url(resource, &r) || !parse_url(server_url, &s))
        return false;
    if (r.https != s.https || r.port != s.port || r.host_len != s.host_len)
        return false;
    for (size_t i = 0; i < r.host_len; i++)
        if (ascii_lower(r.host[i]) != ascii_lower(s.host[i]))
            return false;

    /* Below the resource on a "/" boundary: "/mcp" covers "/mcp" and
     * "/mcp/x", not "/mcpx"; the root ("" once trimmed, as "//" is)
     * covers all. An empty path is "/" (RFC 9110 §4.2.3). */
    size_t len = path_len_trimmed(&r);
    const char *path = s.path_len > 0 ? s.path : "/";
    size_t path_len = s.path_len > 0 ? s.path_len : 1;
    return path_len >= len && memcmp(path, r.path, len) == 0 &&
           (path_len == len || path[len] == '/');
}

bool oauth_url_is_safe(const char *url, bool insecure)
{
    url_t u;
    if (!url || !parse_url(url, &u))
        return false;
    if (insecure || u.https)
        return true;
    static const char *const loopback[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < sizeof loopback / sizeof loopback[0]; i++)
        if (span_equals_nocase(u.host, u.host_len, loopback[i]))
            return true;
    return false;
}

/* ------------------------------------------------------------------------
 * application/x-www-form-urlencoded (WHATWG URL §5)
 * ------------------------------------------------------------------------ */

static bool form_keeps(unsigned char c)
{
    return is_alpha(c) || is_digit(c) || c == '*' || c == '-' || c == '.' || c == '_';
}

static size_t form_encoded_len(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++)
        n += form_keeps((unsigned char)*s) || *s == ' ' ? 1 : 3;
    return n;
}

/* Writes the encoding of `s` at `w` (no NUL); returns the end. */
static char *form_encode(char *w, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (form_keeps(c)) {
            *w++ = (char)c;
        } else if (c == ' ') {
            *w++ = '+';
        } else {
            *w++ = '%';
            *w++ = hex[c >> 4];
            *w++ = hex[c & 15];
        }
    }
    return w;
}

char *oauth_form_encode(const char *text)
{
    char *out = malloc(form_encoded_len(text) + 1);
    if (out)
        *form_encode(out, text) = '\0';
    return out;
}

int oauth_form_add(char **form, const char *name, const char *value)
{
    if (!value)
        return MCP_OK;
    size_t old_len = *form ? strlen(*form) : 0;
    bool separate = old_len > 0;
    size_t len = old_len + (separate ? 1 : 0) + form_encoded_len(name) + 1 +
                 form_encoded_len(value);
    char *grown = realloc(*form, len + 1);
    if (!grown)
        return MCP_ENOMEM;
    char *w = grown + old_len;
    if (separate)
        *w++ = '&';
    w = form_encode(w, name);
    *w++ = '=';
    w = form_encode(w, value);
    *w = '\0';
    *form = grown;
    return MCP_OK;
}

int oauth_url_with_query(const char *url, const char *form, char **out)
{
    size_t base_len = strcspn(url, "#");
    const char *query = memchr(url, '?', base_len);
    const char *separator = "";
    if (form && *form != '\0') {
        if (!query)
            separator = "?";
        else if (query != url + base_len - 1 && url[base_len - 1] != '&')
            separator = "&"; /* none after an empty query or a trailing "&" */
    }
    *out = format_new("%.*s%s%s", (int)base_len, url, separator, form ? form : "");
    return *out ? MCP_OK : MCP_ENOMEM;
}

/* The byte the form-encoded text at *s stands for, moving past it. The
 * text's escapes were checked. */
static unsigned char form_decode_byte(const char **s)
{
    const char *p = *s;
    if (*p == '+') {
        *s = p + 1;
        return ' ';
    }
    if (*p == '%') {
        *s = p + 3;
        return (unsigned char)(mcp_hex_digit((unsigned char)p[1]) << 4 |
                               mcp_hex_digit((unsigned char)p[2]));
    }
    *s = p + 1;
    return (unsigned char)*p;
}

/* Whether the form-encoded `len` bytes at `s` decode to `name`. */
static bool form_span_equals(const char *s, size_t len, const char *name)
{
    const char *end = s + len;
    size_t i = 0;
    while (s < end) {
        if (name[i] == '\0' || form_decode_byte(&s) != (unsigned char)name[i])
            return false;
        i++;
    }
    return name[i] == '\0';
}

/* The decoding of the form-encoded `len` bytes at `s`. */
static int form_decode_new(const char *s, size_t len, char **out)
{
    char *value = malloc(len + 1), *w = value;
    if (!value)
        return MCP_ENOMEM;
    const char *end = s + len;
    while (s < end) {
        unsigned char c = form_decode_byte(&s);
        if (c == '\0') { /* it would end the C string early */
            free(value);
            return MCP_EPROTO;
        }
        *w++ = (char)c;
    }
    *w = '\0';
    *out = value;
    return MCP_OK;
}

int oauth_query_get(const char *url, const char *name, char **value_out)
{
    *value_out = NULL;
    size_t before_fragment = strcspn(url, "#");
    const char *query = memchr(url, '?', before_fragment);
    if (!query)
        return MCP_ENOTFOUND;
    query++;
    size_t query_len = (size_t)(url + before_fragment - query);
    /* A bad escape spoils the whole query, whichever parameter is asked
     * for: the answer must not depend on where it stands. */
    for (size_t i = 0; i < query_len; i++)
        if (query[i] == '%' && (query_len - i < 3 || !is_pct_escape(query + i)))
            return MCP_EPROTO;

    for (const char *pair = query, *end = query + query_len; pair < end;) {
        size_t pair_len = strcspn(pair, "&#");
        const char *equals = memchr(pair, '=', pair_len);
        size_t name_len = equals ? (size_t)(equals - pair) : pair_len;
        if (pair_len > 0 && form_span_equals(pair, name_len, name)) {
            const char *value = equals ? equals + 1 : pair + pair_len;
            return form_decode_new(value, (size_t)(pair + pair_len - value), value_out);
        }
        pair += pair_len + 1;
    }
    return MCP_ENOTFOUND;
}

/* ------------------------------------------------------------------------
 * Token endpoint errors
 * ------------------------------------------------------------------------ */

#define ERROR_DESCRIPTION_MAX 300

/* RFC 6749 §5.2: error and error_description are of %x20-21 / %x23-5B /
 * %x5D-7E; anything else is shown as '?', so that no peer writes control
 * bytes into a message. Copies at most `max` bytes of `text` to `w`. */
static char *copy_error_text(char *w, const char *text, size_t max)
{
    for (size_t i = 0; text[i] && i < max; i++) {
        unsigned char c = (unsigned char)text[i];
        bool allowed = c >= 0x20 && c <= 0x7e && c != '"' && c != '\\';
        *w++ = allowed ? (char)c : '?';
    }
    return w;
}

int oauth_token_error(const char *body, size_t len, char **out)
{
    *out = NULL;
    json_t *answer = body ? json_loadb(body, len, 0, NULL) : NULL;
    const char *error = json_string_value(json_object_get(answer, "error"));
    const char *description = json_string_value(json_object_get(answer, "error_description"));
    if (!error || !*error) {
        json_decref(answer);
        return MCP_ENOTFOUND;
    }
    size_t error_len = strlen(error);
    size_t description_len = description ? strlen(description) : 0;
    if (description_len > ERROR_DESCRIPTION_MAX)
        description_len = ERROR_DESCRIPTION_MAX;
    char *text = malloc(error_len + description_len + 4);
    if (text) {
        char *w = copy_error_text(text, error, error_len);
        if (description_len > 0) {
            *w++ = ' ';
            *w++ = '(';
            w = copy_error_text(w, description, description_len);
            *w++ = ')';
        }
        *w = '\0';
    }
    json_decref(answer);
    *out = text;
    return text ? MCP_OK : MCP_ENOMEM;
}

/* ------------------------------------------------------------------------
 * PKCE (RFC 7636) and random strings
 * ------------------------------------------------------------------------ */

/* RFC 7636 §4.1 "unreserved". */
static const char UNRESERVED[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";

int oauth_random_string(char *out, size_t len)
{
    enum { ALPHABET = sizeof UNRESERVED - 1 };
    /* Bytes from the largest multiple of the alphabet's size up are
     * dropped: taking them modulo it would favour the first letters. */
    enum { LIMIT = 256 - 256 % ALPHABET };
    unsigned char pool[64];
    size_t used = sizeof pool;

    for (size_t filled = 0; filled < len;) {
        if (used == sizeof pool) {
            if (mcp_secret_random(pool, sizeof pool) != MCP_OK) {
                out[0] = '\0';
                return MCP_EIO;
            }
            used = 0;
        }
        unsigned char b = pool[used++];
        if (b < LIMIT)
            out[filled++] = UNRESERVED[b % ALPHABET];
    }
    out[len] = '\0';
    return MCP_OK;
}

int oauth_pkce_s256(const char *verifier, char out[44])
{
    uint8_t digest[CLIENT_SHA256_SIZE];
    int rc = client_sha256(verifier, strlen(verifier), digest, NULL);
    if (rc != MCP_OK) {
        out[0] = '\0';
        return rc;
    }
    mcp_base64url_encode(digest, sizeof digest, out);
    return MCP_OK;
}

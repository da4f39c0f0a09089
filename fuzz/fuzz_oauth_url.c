/*
 * URLs and queries from peers and users. The input is three parts split
 * at the first two newlines: a URL `a`, and `b` and `c`, used as a second
 * and third URL, and as a parameter name and value.
 *
 * The URL functions share one parser, so they agree on what parses; what
 * they build parses again; the canonical resource is a fixed point that
 * still names the same resource; a URL covers itself, coverage is
 * transitive and survives canonical forms; the origin parses, is its own
 * origin and starts the canonical resource; a URL credentials may go to
 * over plain HTTP has a loopback origin. A value form-encoded into a
 * query reads back unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/oauth/oauth_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The bytes up to the next newline (all the rest when `last`), as a C
 * string; *data and *size move past them and the newline. */
static char *take_part(const uint8_t **data, size_t *size, int last)
{
    const uint8_t *nl = last ? NULL : memchr(*data, '\n', *size);
    size_t len = nl ? (size_t)(nl - *data) : *size;
    char *part = malloc(len + 1);
    if (!part)
        abort();
    memcpy(part, *data, len);
    part[len] = '\0';
    *data += nl ? len + 1 : len;
    *size -= nl ? len + 1 : len;
    return part;
}

static void check_parses(const char *url)
{
    char *canonical;
    if (oauth_canonical_resource(url, &canonical) != MCP_OK)
        abort();
    free(canonical);
}

static void check_discovery(const char *url, bool parses)
{
    char *prm[2], *as[3];
    size_t n;
    int rc = oauth_prm_urls(url, prm, &n);
    if (rc != (parses ? MCP_OK : MCP_EINVAL) || n > 2 || (parses && n == 0))
        abort();
    for (size_t i = 0; i < n; i++) {
        check_parses(prm[i]);
        free(prm[i]);
    }

    rc = oauth_as_metadata_urls(url, as, &n);
    if (rc == MCP_OK && (!parses || n < 2 || n > 3 || strpbrk(url, "?#")))
        abort();
    if (rc != MCP_OK && (rc != MCP_EINVAL || n != 0 || as[0]))
        abort();
    for (size_t i = 0; i < n; i++) {
        check_parses(as[i]);
        free(as[i]);
    }
}

/* The canonical resource: parses, is its own canonical form, covers the
 * URL it came from and is covered by it. */
static void check_canonical(const char *url, bool parses)
{
    char *canonical = NULL, *twice = NULL;
    int rc = oauth_canonical_resource(url, &canonical);
    if (!parses) {
        if (rc != MCP_EINVAL || canonical || oauth_resource_allows(url, url))
            abort();
        return;
    }
    if (rc != MCP_OK || oauth_canonical_resource(canonical, &twice) != MCP_OK ||
        strcmp(canonical, twice) != 0)
        abort();
    if (!oauth_resource_allows(url, url) || !oauth_resource_allows(canonical, url) ||
        !oauth_resource_allows(url, canonical))
        abort();
    free(canonical);
    free(twice);
}

/* The origin: refused exactly when the URL is; else "scheme://host[:port]",
 * its own origin, and where the canonical resource starts. */
static void check_origin(const char *url, bool parses)
{
    char *origin = NULL, *twice = NULL, *canonical = NULL;
    int rc = oauth_origin(url, &origin);
    if (!parses) {
        if (rc != MCP_EINVAL || origin)
            abort();
        return;
    }
    if (rc != MCP_OK || oauth_origin(origin, &twice) != MCP_OK || strcmp(origin, twice) != 0 ||
        oauth_canonical_resource(url, &canonical) != MCP_OK ||
        strncmp(canonical, origin, strlen(origin)) != 0 ||
        (canonical[strlen(origin)] != '\0' && canonical[strlen(origin)] != '/'))
        abort();
    free(origin);
    free(twice);
    free(canonical);
}

/* Where credentials may go: nothing the parser refuses; over plain HTTP
 * only to a loopback host, as the URL's own origin names it (so that the
 * host checked is the host connected to). */
static void check_safe(const char *url, bool parses)
{
    if (oauth_url_is_safe(url, true) != parses)
        abort();
    if (!oauth_url_is_safe(url, false) || strncasecmp(url, "https://", 8) == 0)
        return;
    char *origin = NULL;
    if (oauth_origin(url, &origin) != MCP_OK)
        abort();
    static const char *const loopback[] = {"http://localhost", "http://127.0.0.1",
                                           "http://[::1]"};
    bool local = false;
    for (size_t i = 0; i < sizeof loopback / sizeof loopback[0]; i++) {
        size_t n = strlen(loopback[i]);
        if (strncmp(origin, loopback[i], n) == 0 && (origin[n] == '\0' || origin[n] == ':'))
            local = true;
    }
    if (!local)
        abort();
    free(origin);
}

/* Coverage is transitive, and canonical forms keep it. */
static void check_coverage(const char *a, const char *b, const char *c)
{
    if (!oauth_resource_allows(a, b))
        return;
    if (oauth_resource_allows(b, c) && !oauth_resource_allows(a, c))
        abort();
    char *ca, *cb;
    if (oauth_canonical_resource(a, &ca) != MCP_OK || oauth_canonical_resource(b, &cb) != MCP_OK ||
        !oauth_resource_allows(ca, cb))
        abort();
    free(ca);
    free(cb);
}

/* name=value encoded into a query reads back, alone or after the query
 * `url` already has (when that holds no `name`). */
static void check_form(const char *url, const char *name, const char *value)
{
    char *form = NULL, *alone = NULL, *joined = NULL, *back = NULL, *unused = NULL;
    if (oauth_form_add(&form, name, value) != MCP_OK)
        abort();
    if (oauth_url_with_query("http://h/?", form, &alone) != MCP_OK ||
        oauth_query_get(alone, name, &back) != MCP_OK || strcmp(back, value) != 0)
        abort();
    free(back);
    back = NULL;

    int rc = oauth_query_get(url, name, &unused);
    if (rc != MCP_OK && rc != MCP_ENOTFOUND && rc != MCP_EPROTO)
        abort();
    if ((rc == MCP_OK) != (unused != NULL))
        abort();
    if (rc == MCP_ENOTFOUND) {
        if (oauth_url_with_query(url, form, &joined) != MCP_OK ||
            oauth_query_get(joined, name, &back) != MCP_OK || strcmp(back, value) != 0)
            abort();
    }
    free(form);
    free(alone);
    free(joined);
    free(back);
    free(unused);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *a = take_part(&data, &size, 0);
    char *b = take_part(&data, &size, 0);
    char *c = take_part(&data, &size, 1);

    char *probe;
    bool parses = oauth_canonical_resource(a, &probe) == MCP_OK;
    free(probe);
    check_discovery(a, parses);
    check_canonical(a, parses);
    check_origin(a, parses);
    check_safe(a, parses);
    check_coverage(a, b, c);
    check_form(a, b, c);

    free(a);
    free(b);
    free(c);
    return 0;
}

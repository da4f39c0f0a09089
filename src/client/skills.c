/*
 * The Skills extension on the client (SEP-2640): skills/list and
 * skills/get, whose entries skill_shape.c reads, and the reading of a
 * skill's files with the verification the extension asks of hosts.
 *
 * A file is fetched with resources/read, like any resource (the same
 * cache, options and errors), and handed out only once verified against
 * the entry the caller holds: its bytes have the size and the SHA-256
 * digest of its manifest entry, the size first (a wrong size fails
 * without hashing anything), and a SKILL.md's frontmatter says what the
 * entry says. Nothing is fetched that the entry does not list: the host
 * asked for a skill it approved, not for whatever the server names.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "client/sha256.h"
#include "clock.h"
#include "protocol/base64.h"
#include "protocol/hex.h"
#include "skill_md.h"

/* URIs are cut to this many bytes in messages, which hold 256. */
#define URI_SHOWN 96

static int check_call(const mcp_client_t *client, mcp_error_t *err)
{
    if (client->legacy)
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "the legacy protocol this server speaks has no Skills extension");
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * skills/list and skills/get
 * ------------------------------------------------------------------------ */

int mcp_client_list_skills(mcp_client_t *client, const char *cursor,
                           const mcp_request_options_t *opts, json_t **result_out,
                           mcp_error_t *err)
{
    if (result_out)
        *result_out = NULL;
    if (!client || !result_out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "client and result_out are required");
    int rc = check_call(client, err);
    json_t *page = NULL;
    if (rc == MCP_OK)
        rc = client_list_page(client, "skills/list", cursor, opts, &page, err);
    if (rc == MCP_OK)
        rc = client_skill_list_read(page, err);
    if (rc != MCP_OK) {
        json_decref(page);
        return rc;
    }
    *result_out = page;
    return MCP_OK;
}

int mcp_client_list_skills_all(mcp_client_t *client, const mcp_request_options_t *opts,
                               json_t **skills_out, mcp_error_t *err)
{
    if (skills_out)
        *skills_out = NULL;
    if (!client || !skills_out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "client and skills_out are required");
    int rc = check_call(client, err);
    if (rc != MCP_OK)
        return rc;
    return client_list_all_checked(client, "skills/list", "skills", client_skill_list_read, opts,
                                   skills_out, err);
}

int mcp_client_get_skill(mcp_client_t *client, const char *uri,
                         const mcp_request_options_t *opts, json_t **skill_out, mcp_error_t *err)
{
    if (skill_out)
        *skill_out = NULL;
    if (!client || !uri || !skill_out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "client, uri and skill_out are required");
    int rc = check_call(client, err);
    if (rc != MCP_OK)
        return rc;
    json_t *params = json_pack("{s:s}", "uri", uri);
    if (!params)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the uri is not UTF-8 (or out of memory)");
    json_t *result = NULL;
    const json_t *entry = NULL;
    rc = client_call(client, "skills/get", params, opts, &result, err);
    json_decref(params);
    if (rc == MCP_OK)
        rc = client_skill_get_read(result, uri, &entry, err);
    if (rc == MCP_OK)
        *skill_out = json_incref((json_t *)entry);
    json_decref(result);
    return rc;
}

int mcp_client_read_directory(mcp_client_t *client, const char *uri, const char *cursor,
                              const mcp_request_options_t *opts, json_t **result_out,
                              mcp_error_t *err)
{
    if (result_out)
        *result_out = NULL;
    if (!client || !uri || !result_out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "client, uri and result_out are required");
    int rc = check_call(client, err);
    if (rc != MCP_OK)
        return rc;
    json_t *params = json_pack("{s:s}", "uri", uri);
    if (params && cursor && json_object_set_new(params, "cursor", json_string(cursor)) != 0) {
        json_decref(params);
        params = NULL;
    }
    if (!params)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the uri or cursor is not UTF-8");
    json_t *result = NULL;
    rc = client_call(client, "resources/directory/read", params, opts, &result, err);
    json_decref(params);
    const json_t *children = json_object_get(result, "resources");
    if (rc == MCP_OK && !json_is_array(children))
        rc = mcp_error_set(err, MCP_EPROTO, 0, NULL,
                           "resources/directory/read result has no resources array");
    size_t i;
    const json_t *child;
    json_array_foreach(rc == MCP_OK ? children : NULL, i, child) {
        if (!json_is_string(json_object_get(child, "uri"))) {
            rc = mcp_error_set(err, MCP_EPROTO, 0, NULL,
                               "resources/directory/read: child %zu has no string uri", i);
            break;
        }
    }
    const json_t *next = json_object_get(result, "nextCursor");
    if (rc == MCP_OK && next && !json_is_string(next))
        rc = mcp_error_set(err, MCP_EPROTO, 0, NULL,
                           "resources/directory/read: nextCursor is not a string");
    if (rc != MCP_OK) {
        json_decref(result);
        return rc;
    }
    *result_out = result;
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Verifying a file
 * ------------------------------------------------------------------------ */

static int failed(mcp_error_t *err, const char *uri, const char *what)
{
    return mcp_error_set(err, MCP_EPROTO, 0, NULL, "skill file %.*s: %s", URI_SHOWN, uri, what);
}

/* The bytes of a content: a text's UTF-8, a blob's decoded base64; copied,
 * NUL-terminated, into *bytes_out. */
static int content_bytes(const json_t *content, const char *uri, char **bytes_out,
                         size_t *len_out, mcp_error_t *err)
{
    const json_t *text = json_object_get(content, "text");
    const json_t *blob = json_object_get(content, "blob");
    if ((text != NULL) == (blob != NULL) || (text && !json_is_string(text)) ||
        (blob && !json_is_string(blob)))
        return failed(err, uri, "the content has no text or blob string, or both");
    const json_t *source = text ? text : blob;
    size_t len = json_string_length(source);
    size_t room = text ? len : mcp_base64_decoded_max(len);
    char *bytes = malloc(room + 1);
    if (!bytes)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    if (text) {
        memcpy(bytes, json_string_value(text), len);
    } else if (mcp_base64_decode(json_string_value(blob), len, (unsigned char *)bytes, &len) !=
               MCP_OK) {
        free(bytes);
        return failed(err, uri, "the blob is not base64");
    }
    bytes[len] = '\0';
    *bytes_out = bytes;
    *len_out = len;
    return MCP_OK;
}

/* The size, then the digest, of the manifest entry. */
static int check_manifest(const client_skill_file_t *file, const char *bytes, size_t len,
                          mcp_error_t *err)
{
    if ((uint64_t)file->size != len)
        return mcp_error_set(err, MCP_EPROTO, 0, NULL,
                             "skill file %.*s: size mismatch: %zu bytes, the manifest says %lld",
                             URI_SHOWN, file->uri, len, (long long)file->size);
    uint8_t digest[CLIENT_SHA256_SIZE];
    int rc = client_sha256(bytes, len, digest, err);
    if (rc != MCP_OK)
        return rc;
    char hex[2 * CLIENT_SHA256_SIZE];
    mcp_hex_encode(digest, sizeof digest, hex);
    const char *listed = file->digest + strlen("sha256:");
    if (memcmp(hex, listed, sizeof hex) != 0)
        return failed(err, file->uri, "digest mismatch: the content is not what the manifest "
                                      "lists");
    return MCP_OK;
}

/* The first member in which two frontmatter objects differ, or NULL. */
static const char *first_difference(const json_t *a, const json_t *b)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)a, key, value) {
        if (!mcp_skill_md_frontmatter_equal(value, json_object_get(b, key)))
            return key;
    }
    json_object_foreach((json_t *)b, key, value) {
        if (!json_object_get(a, key))
            return key;
    }
    return NULL;
}

/* The SKILL.md's own frontmatter must be the entry's, field for field. */
static int check_frontmatter(const client_skill_t *skill, const char *bytes, size_t len,
                             mcp_error_t *err)
{
    json_t *parsed = NULL;
    mcp_error_t e = {0};
    int rc = mcp_skill_md_frontmatter(bytes, len, &parsed, NULL, &e);
    if (rc == MCP_EINVAL)
        rc = mcp_error_set(err, MCP_EPROTO, 0, NULL, "skill file %.*s: frontmatter: %s",
                           URI_SHOWN, skill->uri, e.message);
    else if (rc != MCP_OK && err)
        mcp_error_move(err, &e);
    else if (!mcp_skill_md_frontmatter_equal(parsed, skill->frontmatter)) {
        const char *field = first_difference(parsed, skill->frontmatter);
        rc = mcp_error_set(err, MCP_EPROTO, 0, NULL,
                           "skill file %.*s: frontmatter mismatch%s%.64s%s: the SKILL.md does "
                           "not say what the skill entry says",
                           URI_SHOWN, skill->uri, field ? " in \"" : "", field ? field : "",
                           field ? "\"" : "");
    }
    mcp_error_clear(&e);
    json_decref(parsed);
    return rc;
}

int client_skill_file_verify(const client_skill_t *skill, const client_skill_file_t *file,
                             const json_t *result, char **bytes_out, size_t *len_out,
                             mcp_error_t *err)
{
    *bytes_out = NULL;
    *len_out = 0;
    const json_t *contents = json_object_get(result, "contents");
    if (!json_is_array(contents) || json_array_size(contents) == 0)
        return failed(err, file->uri, "resources/read returned no content");
    if (json_array_size(contents) > 1)
        return failed(err, file->uri, "resources/read returned several contents for one file");
    const json_t *content = json_array_get(contents, 0);
    const json_t *uri = json_object_get(content, "uri");
    if (!json_is_string(uri) || strlen(file->uri) != json_string_length(uri) ||
        strcmp(json_string_value(uri), file->uri) != 0)
        return failed(err, file->uri, "resources/read returned the content of another uri");

    char *bytes = NULL;
    size_t len = 0;
    int rc = content_bytes(content, file->uri, &bytes, &len, err);
    if (rc != MCP_OK)
        return rc;
    if (file->digest)
        rc = check_manifest(file, bytes, len, err);
    if (rc == MCP_OK && strcmp(file->uri, skill->uri) == 0)
        rc = check_frontmatter(skill, bytes, len, err);
    if (rc != MCP_OK) {
        free(bytes);
        return rc;
    }
    *bytes_out = bytes;
    *len_out = len;
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Reading a file
 * ------------------------------------------------------------------------ */

/* Would resources/read of `params` be answered from the cache now? */
static bool read_is_cached(mcp_client_t *c, const json_t *params,
                           const mcp_request_options_t *opts)
{
    if (c->disable_cache || (opts && opts->bypass_cache))
        return false;
    char *key = client_cache_key("resources/read", params);
    if (!key)
        return false;
    uint64_t auth_context = client_auth_context(c);
    pthread_mutex_lock(&c->lock);
    bool fresh = client_cache_fresh(c->cache, key, auth_context, mcp_clock_ms());
    pthread_mutex_unlock(&c->lock);
    free(key);
    return fresh;
}

/* resources/read of the file, verified. */
static int read_verified(mcp_client_t *c, const client_skill_t *skill,
                         const client_skill_file_t *file, const mcp_request_options_t *opts,
                         char **bytes_out, size_t *len_out, mcp_error_t *err)
{
    json_t *params = json_pack("{s:s}", "uri", file->uri);
    if (!params)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    bool cached = read_is_cached(c, params, opts);
    json_t *result = NULL;
    int rc = client_call(c, "resources/read", params, opts, &result, err);
    if (rc == MCP_OK)
        rc = client_skill_file_verify(skill, file, result, bytes_out, len_out, err);
    json_decref(result);
    result = NULL;
    /* A copy kept from an earlier read may predate a change of the skill
     * the entry already describes: the server has the last word, once. */
    if (rc == MCP_EPROTO && cached) {
        mcp_request_options_t fresh = opts ? *opts : (mcp_request_options_t){0};
        fresh.bypass_cache = true;
        rc = client_call(c, "resources/read", params, &fresh, &result, err);
        if (rc == MCP_OK)
            rc = client_skill_file_verify(skill, file, result, bytes_out, len_out, err);
        json_decref(result);
    }
    json_decref(params);
    return rc;
}

int mcp_client_read_skill_file(mcp_client_t *client, const json_t *skill, const char *file_uri,
                               const mcp_request_options_t *opts, char **content_out,
                               size_t *len_out, bool *verified_out, mcp_error_t *err)
{
    if (content_out)
        *content_out = NULL;
    if (len_out)
        *len_out = 0;
    if (verified_out)
        *verified_out = false;
    if (!client || !skill || !file_uri || !content_out || !len_out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "client, skill, file_uri, content_out and len_out are required");
    int rc = check_call(client, err);
    if (rc != MCP_OK)
        return rc;
    client_skill_t s;
    rc = client_skill_read(skill, &s, err);
    if (rc != MCP_OK) /* the caller's entry: *err says what is wrong with it */
        return rc == MCP_EPROTO ? MCP_EINVAL : rc;
    client_skill_file_t file;
    if (!client_skill_file(&s, file_uri, &file))
        return mcp_error_set(err, MCP_ENOTFOUND, 0, NULL, "%.*s is not a file of the skill %.*s",
                             URI_SHOWN, file_uri, URI_SHOWN, s.uri);
    rc = read_verified(client, &s, &file, opts, content_out, len_out, err);
    if (rc == MCP_OK && verified_out)
        *verified_out = file.digest != NULL;
    return rc;
}

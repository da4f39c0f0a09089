/*
 * Connecting: which era the server speaks (digest sections 4.9, 5.4, 14.9).
 *
 * In the auto era the client sends server/discover and hands whatever came
 * back to mcp_classify_probe(), the pure verdict of the protocol core, and
 * acts on it:
 *
 *   MODERN            adopt the DiscoverResult
 *   MODERN_RETRY      probe again with the version the server named
 *   LEGACY            the initialize handshake on the same connection
 *                     (HTTP: Streamable HTTP, then HTTP+SSE)
 *   RECONNECT_LEGACY  stdio: start the server again, then initialize (also
 *                     when a LEGACY verdict's server exits before it
 *                     answered initialize)
 *   AUTHORIZE         MCP_EAUTH (a token callback has had its one chance
 *                     to answer the challenge: see roundtrip.c)
 *   RETRY             a few more probes with backoff, then an error
 *   ERROR             an error
 *
 * The verdict is pinned for the connection: nothing later turns a modern
 * connection into a legacy one. The modern era option turns a legacy
 * verdict into an error that says so; the legacy option and a previous
 * verdict skip the probe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_internal.h"
#include "client/legacy/legacy.h"
#include "mcp/errors.h"
#include "mcp/request.h"

/* At most this many -32022 retries with a version the server named. */
#define MAX_VERSION_RETRIES 2

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/*
 * Closes and frees the transport in use, if any, before connect makes
 * another. Its end was connect's business and is forgotten: closed, it
 * reports no more. The next transport reports to the same hooks as soon as
 * it is made, so its end, even one before connect sees it, counts.
 */
static void drop_transport(mcp_client_t *c)
{
    client_transport_t *old = c->transport;
    c->transport = NULL;
    if (old) {
        old->ops->close(old);
        old->ops->free(old);
    }
    pthread_mutex_lock(&c->lock);
    c->closed = false;
    pthread_mutex_unlock(&c->lock);
}

/* Turns what the probe's round trip gave into the classifier's outcome. */
static void probe_outcome(mcp_transport_kind_t kind, int rc, const json_t *response,
                          const client_wire_t *wire, mcp_probe_outcome_t *out)
{
    memset(out, 0, sizeof *out);
    out->http_status = wire->http_status;
    out->content_type = wire->content_type;
    if (rc == MCP_OK) {
        out->event = MCP_PROBE_RESPONSE;
        out->message = response;
    } else if (rc == MCP_ETIMEDOUT) {
        out->event = MCP_PROBE_TIMEOUT;
    } else if (kind == MCP_TRANSPORT_STDIO) {
        /* The pipe broke or the server exited: either way it is gone. */
        out->event = rc == MCP_ECLOSED ? MCP_PROBE_EXITED : MCP_PROBE_NETWORK_ERROR;
    } else if (wire->http_status != 0) {
        out->event = MCP_PROBE_RESPONSE;
        out->body = wire->body;
        out->body_len = wire->body_len;
    } else {
        out->event = MCP_PROBE_NETWORK_ERROR;
    }
}

/* One server/discover on the wire, classified. */
static int probe_once(mcp_client_t *c, mcp_transport_kind_t kind, int64_t timeout_ms,
                      mcp_probe_verdict_t *verdict, int *wire_rc, mcp_error_t *why)
{
    pthread_mutex_lock(&c->lock);
    json_int_t id = c->next_id++;
    const char *version = c->version;
    pthread_mutex_unlock(&c->lock);

    client_hints_t hints;
    pthread_mutex_lock(&c->lock);
    client_meta_t meta = {version, c->capabilities, c->client_info, c->log_level};
    pthread_mutex_unlock(&c->lock);
    json_t *request = NULL;
    if (client_hints_build(&hints, version, "server/discover", NULL, NULL) == MCP_OK)
        request = client_request_build(id, "server/discover", NULL, &meta, false);
    if (!request) {
        client_hints_clear(&hints);
        return mcp_error_set(why, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    client_call_opts_t o = {.timeout_ms = timeout_ms};
    client_wire_t wire = {0};
    json_t *response = NULL;
    int rc = client_roundtrip_wire(c, request, &hints.h, &o, &response, &wire, why);
    *wire_rc = rc;
    client_hints_clear(&hints);
    json_decref(request);
    if (rc == MCP_ENOMEM || rc == MCP_ESTATE) {
        client_wire_clear(&wire);
        return rc;
    }

    mcp_probe_outcome_t outcome;
    probe_outcome(kind, rc, response, &wire, &outcome);
    mcp_classify_probe(kind, &outcome, c->versions, c->n_versions, verdict);
    /* Keep the peer's own words for the error message. */
    const json_t *error = json_object_get(response, "error");
    if (error && why) {
        mcp_error_t e = {0};
        if (mcp_error_from_json(&e, error) == MCP_OK)
            mcp_error_move(why, &e);
        mcp_error_clear(&e);
    }
    json_decref(response);
    client_wire_clear(&wire);
    return MCP_OK;
}

/* Keeps what the DiscoverResult says about the server. serverInfo lives in
 * _meta since the final 2026-07-28 text; earlier drafts put it in the body
 * (digest 14.3), so both are read. */
static int adopt_discover_result(mcp_client_t *c, const json_t *result, mcp_error_t *err)
{
    if (!mcp_discover_result_valid(result))
        return mcp_error_set(err, MCP_EPROTO, 0, NULL, "the server's DiscoverResult is malformed");
    const char *version = mcp_version_pick_json(json_object_get(result, "supportedVersions"),
                                                c->versions, c->n_versions);
    if (!version)
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "the server shares no protocol version with this client");
    const json_t *info = json_object_get(json_object_get(result, "_meta"), MCP_META_SERVER_INFO);
    if (!json_is_object(info))
        info = json_object_get(result, "serverInfo");
    /* A connection that forgot what the server said would be no better
     * than none. */
    if (client_adopt_server(c, json_is_object(info) ? info : NULL,
                            json_object_get(result, "capabilities"),
                            json_string_value(json_object_get(result, "instructions"))) !=
        MCP_OK)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    pthread_mutex_lock(&c->lock);
    c->version = version;
    c->era = MCP_ERA_MODERN;
    pthread_mutex_unlock(&c->lock);
    return MCP_OK;
}

/* The modern era without a probe (modern option, previous verdict): the
 * same server/discover through the ordinary call path. */
static int connect_modern(mcp_client_t *c, mcp_error_t *err)
{
    json_t *result = NULL;
    int rc = client_call(c, "server/discover", NULL, NULL, &result, err);
    if (rc == MCP_OK)
        rc = adopt_discover_result(c, result, err);
    json_decref(result);
    return rc;
}

/* Adds the server's stderr, if it said anything, to the message of a
 * connect that fails. A stdio transport is closed first: that stops the
 * server and reads its stderr to the end, so the message holds the
 * server's last words even when the connect noticed the end (a failed
 * write, say) before the transport's reader had read them. */
static int with_stderr(mcp_client_t *c, int rc, mcp_error_t *err)
{
    if (c->kind == MCP_TRANSPORT_STDIO && c->transport)
        c->transport->ops->close(c->transport);
    char tail[sizeof c->stderr_tail + 1];
    client_stderr_tail(c, tail, sizeof tail);
    if (err && tail[0]) {
        char message[MCP_ERROR_MESSAGE_MAX];
        snprintf(message, sizeof message, "%s", err->message);
        mcp_error_set(err, rc, err->code, NULL, "%s (the server's stderr: %s)", message, tail);
    }
    return rc;
}

/* initialize was refused with a JSON-RPC error that a 2026-07-28 server
 * gives it (digest 2 and 1.5: -32601, the method is gone; -32022 naming
 * the versions it speaks): the message says so, keeping the server's code,
 * message and data, so that the caller learns which era to ask for. */
static void say_modern(int http_status, mcp_error_t *err)
{
    if (!err || (err->code != MCP_METHOD_NOT_FOUND &&
                 err->code != MCP_UNSUPPORTED_PROTOCOL_VERSION))
        return;
    char message[MCP_ERROR_MESSAGE_MAX];
    snprintf(message, sizeof message, "%s", err->message);
    mcp_error_set(err, MCP_ERPC, err->code, json_incref(err->data),
                  "%s (HTTP %d: the server answers as a 2026-07-28 server does and does not "
                  "speak the legacy protocol)", message, http_status);
}

/*
 * The legacy handshake. Over HTTP, an endpoint that answers initialize
 * with 400, 404 or 405 and no JSON-RPC answer does not speak Streamable
 * HTTP: the old HTTP+SSE transport is the last resort. One that answers
 * with a JSON-RPC error does speak it (a modern-only server answers
 * initialize -32601 at 404, or -32022 at 400: digest 4.9), and trying
 * HTTP+SSE there would only replace the server's own diagnostic with a
 * failed GET: its error is the result.
 */
static int connect_legacy(mcp_client_t *c, const client_connector_t *how, bool sse_first,
                          mcp_error_t *err)
{
    int rc;
    client_wire_t wire = {0};
    if (sse_first) {
        rc = MCP_EUNSUPPORTED;
    } else {
        rc = client_legacy_connect(c, &wire, err);
        bool refused = rc != MCP_OK && (wire.http_status == 400 || wire.http_status == 404 ||
                                        wire.http_status == 405);
        bool no_streamable = refused && !wire.answered;
        if (refused && wire.answered && rc == MCP_ERPC)
            say_modern(wire.http_status, err);
        client_wire_clear(&wire);
        if (!no_streamable || !how || !how->open_sse)
            return rc;
        client_log(c, MCP_LOG_INFO, "initialize over Streamable HTTP failed (%s); trying "
                                    "HTTP+SSE", err ? err->message : mcp_strerror(rc));
    }
    if (!how || !how->open_sse)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "HTTP+SSE needs an HTTP target");
    client_legacy_close(c);
    drop_transport(c);
    client_legacy_free(c);
    rc = how->open_sse(how->ctx, &c->transport, err);
    if (rc != MCP_OK)
        return rc;
    c->verdict.http_sse = true;
    return client_legacy_connect(c, NULL, err);
}

static int pin(mcp_client_t *c, mcp_verdict_kind_t kind, bool probed, const char *reason)
{
    c->verdict = (mcp_client_verdict_t){.kind = kind, .probed = probed, .reason = reason,
                                        .http_sse = c->verdict.http_sse};
    return MCP_OK;
}

/* stdio: starts the server again (what the old process had is dropped)
 * and sends the new one initialize. */
static int restart_for_legacy(mcp_client_t *c, const client_connector_t *how, mcp_error_t *err)
{
    client_legacy_close(c);
    drop_transport(c);
    client_legacy_free(c);
    int rc = how->restart(how->ctx, &c->transport, err);
    if (rc != MCP_OK)
        return rc;
    rc = connect_legacy(c, how, false, err);
    return rc == MCP_OK ? rc : with_stderr(c, rc, err);
}

/* The era option is modern and the probe found a legacy server. */
static int refuse_legacy(mcp_client_t *c, const mcp_probe_verdict_t *v, mcp_error_t *err)
{
    mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                  "the server speaks only the legacy protocol (probe: %s) and the client's era "
                  "option is modern", v->reason ? v->reason : mcp_verdict_name(v->kind));
    return with_stderr(c, MCP_EUNSUPPORTED, err);
}

/* The probe loop of the auto (and modern) era. */
static int probe_and_connect(mcp_client_t *c, mcp_transport_kind_t kind,
                             const client_connector_t *how, mcp_error_t *err)
{
    int64_t timeout = kind == MCP_TRANSPORT_STDIO && how && how->probe_timeout_ms > 0
                          ? how->probe_timeout_ms
                          : c->timeout_ms;
    int attempts = 0, version_retries = 0;
    for (;;) {
        mcp_probe_verdict_t v;
        mcp_error_t why = {0};
        int wire_rc = MCP_OK;
        int rc = probe_once(c, kind, timeout, &v, &wire_rc, &why);
        if (rc != MCP_OK) {
            if (err)
                mcp_error_move(err, &why);
            mcp_error_clear(&why);
            return rc;
        }
        client_log(c, MCP_LOG_DEBUG, "probe verdict: %s (%s)", mcp_verdict_name(v.kind),
                   v.reason ? v.reason : "");
        bool modern_only = c->era_option == MCP_CLIENT_ERA_MODERN;
        switch (v.kind) {
        case MCP_VERDICT_MODERN:
            rc = adopt_discover_result(c, v.discover_result, err);
            if (rc == MCP_OK)
                pin(c, MCP_VERDICT_MODERN, true, v.reason);
            break;
        case MCP_VERDICT_MODERN_RETRY:
            if (++version_retries > MAX_VERSION_RETRIES) {
                rc = mcp_error_set(err, MCP_EPROTO, 0, NULL,
                                   "the server keeps refusing the versions it names");
                break;
            }
            pthread_mutex_lock(&c->lock);
            c->version = v.version;
            pthread_mutex_unlock(&c->lock);
            mcp_probe_verdict_clear(&v);
            mcp_error_clear(&why);
            continue;
        case MCP_VERDICT_LEGACY:
            if (modern_only) {
                rc = refuse_legacy(c, &v, err);
                break;
            }
            pin(c, MCP_VERDICT_LEGACY, true, v.reason);
            rc = connect_legacy(c, how, false, err);
            if (rc == MCP_ECLOSED && kind == MCP_TRANSPORT_STDIO && how && how->restart) {
                /* The server answered the probe (or let it time out) and
                 * then exited, as some end a session that did not begin
                 * with initialize: it is a legacy server all the same,
                 * and one that exited is restarted (digest 5.2, 5.4). */
                client_log(c, MCP_LOG_INFO, "the server exited after the probe (%s); "
                                            "restarting it for the legacy handshake",
                           err ? err->message : mcp_strerror(rc));
                mcp_error_clear(err);
                pin(c, MCP_VERDICT_RECONNECT_LEGACY, true, "the server exited after the probe");
                rc = restart_for_legacy(c, how, err);
            }
            break;
        case MCP_VERDICT_RECONNECT_LEGACY:
            if (modern_only) {
                rc = refuse_legacy(c, &v, err);
                break;
            }
            if (!how || !how->restart) {
                rc = mcp_error_set(err, MCP_ECLOSED, 0, NULL,
                                   "the server exited during the probe");
                rc = with_stderr(c, rc, err);
                break;
            }
            client_log(c, MCP_LOG_INFO, "the server exited during the probe; restarting it "
                                        "for the legacy handshake");
            pin(c, MCP_VERDICT_RECONNECT_LEGACY, true, v.reason);
            rc = restart_for_legacy(c, how, err);
            break;
        case MCP_VERDICT_AUTHORIZE:
            /* With a token callback the probe was already sent again
             * with the callback's answer to the challenge (roundtrip.c). */
            rc = mcp_error_set(err, MCP_EAUTH, 0, NULL, "HTTP %d: the server %s",
                               v.http_status,
                               v.http_status == 401 ? "requires authorization"
                                                    : "refused the authorization");
            break;
        case MCP_VERDICT_RETRY:
            if (++attempts < CLIENT_PROBE_ATTEMPTS) {
                client_log(c, MCP_LOG_INFO, "probe failed (%s); retrying", v.reason);
                sleep_ms((int64_t)CLIENT_PROBE_BACKOFF_MS << (attempts - 1));
                mcp_probe_verdict_clear(&v);
                mcp_error_clear(&why);
                continue;
            }
            rc = mcp_error_set(err, wire_rc == MCP_ETIMEDOUT ? MCP_ETIMEDOUT : MCP_EIO,
                               0, NULL,
                               "the server is not available (%s) after %d attempts; a "
                               "transient failure is never taken for a legacy server",
                               v.reason, attempts);
            break;
        case MCP_VERDICT_ERROR:
        default:
            if (why.code == 0) {
                rc = mcp_error_set(err,
                                   v.error_kind == MCP_PROBE_ERR_NO_COMMON_VERSION
                                       ? MCP_EUNSUPPORTED
                                   : v.error_kind == MCP_PROBE_ERR_HTTP_STATUS ? MCP_EIO
                                                                               : MCP_EPROTO,
                                   0, NULL, "the server/discover probe failed: %s%s%s",
                                   v.reason ? v.reason : "error", why.message[0] ? ": " : "",
                                   why.message);
            } else {
                /* The peer's own JSON-RPC error says it best. */
                rc = v.error_kind == MCP_PROBE_ERR_NO_COMMON_VERSION ? MCP_EUNSUPPORTED
                                                                     : MCP_ERPC;
                if (err)
                    mcp_error_move(err, &why);
            }
            if (kind == MCP_TRANSPORT_STDIO)
                rc = with_stderr(c, rc, err);
            break;
        }
        mcp_probe_verdict_clear(&v);
        mcp_error_clear(&why);
        return rc;
    }
}

/*
 * A previous verdict's era was refused with an answer (a JSON-RPC error, a
 * body of the wrong era): the server changed eras since. The digest (4.9)
 * says to probe again then. A failure to reach the server at all says
 * nothing about its era, and is the result.
 */
static bool verdict_outdated(int rc)
{
    return rc == MCP_ERPC || rc == MCP_EPROTO || rc == MCP_EUNSUPPORTED;
}

static int reprobe(mcp_client_t *c, mcp_transport_kind_t kind, const client_connector_t *how,
                   mcp_error_t *err)
{
    client_log(c, MCP_LOG_INFO, "the previous verdict (%s) no longer fits the server (%s); "
                                "probing", mcp_verdict_name(c->verdict.kind),
               err ? err->message : "");
    client_legacy_close(c);
    client_legacy_free(c);
    pthread_mutex_lock(&c->lock);
    c->era = MCP_ERA_UNKNOWN;
    pthread_mutex_unlock(&c->lock);
    memset(&c->verdict, 0, sizeof c->verdict);
    mcp_error_clear(err);
    return probe_and_connect(c, kind, how, err);
}

int client_connect_with(mcp_client_t *c, client_transport_t *t, mcp_transport_kind_t kind,
                        const client_connector_t *how, mcp_error_t *err)
{
    c->kind = kind;
    c->transport = t; /* `closed` is false: no transport, no end */
    pthread_mutex_lock(&c->lock);
    c->capturing_stderr = true;
    c->stderr_len = 0;
    pthread_mutex_unlock(&c->lock);

    int rc;
    const mcp_client_verdict_t *prev = c->has_previous_verdict &&
                                               c->era_option == MCP_CLIENT_ERA_AUTO
                                           ? &c->previous_verdict
                                           : NULL;
    if (c->era_option == MCP_CLIENT_ERA_LEGACY) {
        pin(c, MCP_VERDICT_LEGACY, false, "era option");
        rc = connect_legacy(c, how, false, err);
    } else if (prev && prev->kind == MCP_VERDICT_MODERN) {
        pin(c, MCP_VERDICT_MODERN, false, "previous verdict");
        rc = connect_modern(c, err);
        if (verdict_outdated(rc))
            rc = reprobe(c, kind, how, err);
    } else if (prev) {
        pin(c, prev->kind, false, "previous verdict");
        c->verdict.http_sse = prev->http_sse;
        rc = connect_legacy(c, how, prev->http_sse, err);
        /* Over HTTP+SSE the Streamable HTTP transport is gone: no probe. */
        if (!prev->http_sse && verdict_outdated(rc))
            rc = reprobe(c, kind, how, err);
    } else {
        rc = probe_and_connect(c, kind, how, err);
    }

    pthread_mutex_lock(&c->lock);
    c->capturing_stderr = false;
    c->connected = rc == MCP_OK;
    bool ended_meanwhile = c->connected && c->closed;
    pthread_mutex_unlock(&c->lock);
    if (ended_meanwhile && c->on_closed)
        c->on_closed(c->on_closed_user, MCP_ECLOSED, "the connection ended as it was made");
    if (rc != MCP_OK) {
        client_legacy_close(c);
        drop_transport(c);
        client_legacy_free(c);
        pthread_mutex_lock(&c->lock);
        c->era = MCP_ERA_UNKNOWN;
        pthread_mutex_unlock(&c->lock);
        memset(&c->verdict, 0, sizeof c->verdict);
    }
    return rc;
}

int client_connect_transport(mcp_client_t *c, client_transport_t *t, mcp_transport_kind_t kind,
                             mcp_error_t *err)
{
    return client_connect_with(c, t, kind, NULL, err);
}

int mcp_client_verdict(const mcp_client_t *client, mcp_client_verdict_t *out)
{
    if (!client || !out)
        return MCP_EINVAL;
    if (mcp_client_era(client) == MCP_ERA_UNKNOWN)
        return MCP_ESTATE;
    *out = client->verdict;
    return MCP_OK;
}

/*
 * client_task_read(): which tasks a server may send, as a table. Each row
 * is a CreateTaskResult (created) or a tasks/get answer (detailed), with
 * the verdict and, for an accepted task, what the client reads from it.
 * Then client_task_read_legacy() (the Task of 2025-11-25's experimental
 * tasks) and client_task_poll_interval().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client/client_internal.h"

/* The members every task has; a row adds its own after them. */
#define BASE "\"taskId\":\"t-1\",\"createdAt\":\"2026-07-28T10:00:00Z\"," \
             "\"lastUpdatedAt\":\"2026-07-28T10:00:01Z\",\"ttlMs\":60000"

enum { CREATED = 0, DETAILED = 1 };

static const struct {
    int kind;
    const char *json;
    const char *expected_id;     /* NULL: any */
    int rc;
    client_task_status_t status; /* when accepted */
    json_int_t interval;         /* -1: none given */
} cases[] = {
    /* Accepted */
    {CREATED, "{" BASE ",\"status\":\"working\",\"pollIntervalMs\":250}", NULL, MCP_OK,
     CLIENT_TASK_WORKING, 250},
    {CREATED, "{" BASE ",\"status\":\"working\"}", "t-1", MCP_OK, CLIENT_TASK_WORKING, -1},
    {CREATED, "{\"taskId\":\"t-1\",\"status\":\"working\",\"createdAt\":\"a\","
              "\"lastUpdatedAt\":\"b\",\"ttlMs\":null}", NULL, MCP_OK, CLIENT_TASK_WORKING, -1},
    {CREATED, "{" BASE ",\"status\":\"working\",\"statusMessage\":\"queued\"}", NULL, MCP_OK,
     CLIENT_TASK_WORKING, -1},
    /* A CreateTaskResult is a Task: no member of its status is read. */
    {CREATED, "{" BASE ",\"status\":\"completed\"}", NULL, MCP_OK, CLIENT_TASK_COMPLETED, -1},
    {CREATED, "{" BASE ",\"status\":\"input_required\"}", NULL, MCP_OK,
     CLIENT_TASK_INPUT_REQUIRED, -1},
    {DETAILED, "{" BASE ",\"status\":\"working\",\"pollIntervalMs\":0}", "t-1", MCP_OK,
     CLIENT_TASK_WORKING, 0},
    {DETAILED, "{" BASE ",\"status\":\"input_required\",\"inputRequests\":{\"q\":{"
               "\"method\":\"elicitation/create\",\"params\":{}}}}", "t-1", MCP_OK,
     CLIENT_TASK_INPUT_REQUIRED, -1},
    {DETAILED, "{" BASE ",\"status\":\"completed\",\"result\":{\"content\":[]}}", "t-1", MCP_OK,
     CLIENT_TASK_COMPLETED, -1},
    {DETAILED, "{" BASE ",\"status\":\"completed\",\"result\":{\"resultType\":\"complete\","
               "\"content\":[],\"isError\":true}}", "t-1", MCP_OK, CLIENT_TASK_COMPLETED, -1},
    {DETAILED, "{" BASE ",\"status\":\"failed\",\"error\":{\"code\":-32603,"
               "\"message\":\"rate limited\",\"data\":{\"retry\":1}}}", "t-1", MCP_OK,
     CLIENT_TASK_FAILED, -1},
    {DETAILED, "{" BASE ",\"status\":\"cancelled\",\"statusMessage\":\"by the admin\"}", "t-1",
     MCP_OK, CLIENT_TASK_CANCELLED, -1},

    /* Refused: the Task members */
    {CREATED, "[]", NULL, MCP_EPROTO, 0, 0},
    {CREATED, "{\"status\":\"working\",\"createdAt\":\"a\",\"lastUpdatedAt\":\"b\","
              "\"ttlMs\":1}", NULL, MCP_EPROTO, 0, 0},
    {CREATED, "{\"taskId\":7,\"status\":\"working\",\"createdAt\":\"a\","
              "\"lastUpdatedAt\":\"b\",\"ttlMs\":1}", NULL, MCP_EPROTO, 0, 0},
    {CREATED, "{" BASE "}", NULL, MCP_EPROTO, 0, 0},
    {CREATED, "{" BASE ",\"status\":\"done\"}", NULL, MCP_EPROTO, 0, 0},
    {CREATED, "{" BASE ",\"status\":\"Working\"}", NULL, MCP_EPROTO, 0, 0},
    {CREATED, "{" BASE ",\"status\":1}", NULL, MCP_EPROTO, 0, 0},
    {CREATED, "{\"taskId\":\"t-1\",\"status\":\"working\",\"lastUpdatedAt\":\"b\","
              "\"ttlMs\":1}", NULL, MCP_EPROTO, 0, 0},
    {CREATED, "{\"taskId\":\"t-1\",\"status\":\"working\",\"createdAt\":\"a\","
              "\"lastUpdatedAt\":5,\"ttlMs\":1}", NULL, MCP_EPROTO, 0, 0},
    {CREATED, "{\"taskId\":\"t-1\",\"status\":\"working\",\"createdAt\":\"a\","
              "\"lastUpdatedAt\":\"b\"}", NULL, MCP_EPROTO, 0, 0},
    {CREATED, "{\"taskId\":\"t-1\",\"status\":\"working\",\"createdAt\":\"a\","
              "\"lastUpdatedAt\":\"b\",\"ttlMs\":1.5}", NULL, MCP_EPROTO, 0, 0},
    {CREATED, "{" BASE ",\"status\":\"working\",\"pollIntervalMs\":\"5\"}", NULL, MCP_EPROTO,
     0, 0},
    {CREATED, "{" BASE ",\"status\":\"working\",\"pollIntervalMs\":2.5}", NULL, MCP_EPROTO, 0,
     0},
    {CREATED, "{" BASE ",\"status\":\"working\",\"statusMessage\":false}", NULL, MCP_EPROTO, 0,
     0},
    /* Refused: another task's state */
    {DETAILED, "{" BASE ",\"status\":\"working\"}", "t-2", MCP_EPROTO, 0, 0},
    /* Refused: the member of the status */
    {DETAILED, "{" BASE ",\"status\":\"input_required\"}", "t-1", MCP_EPROTO, 0, 0},
    {DETAILED, "{" BASE ",\"status\":\"input_required\",\"inputRequests\":[]}", "t-1",
     MCP_EPROTO, 0, 0},
    {DETAILED, "{" BASE ",\"status\":\"completed\"}", "t-1", MCP_EPROTO, 0, 0},
    {DETAILED, "{" BASE ",\"status\":\"completed\",\"result\":\"done\"}", "t-1", MCP_EPROTO, 0,
     0},
    {DETAILED, "{" BASE ",\"status\":\"completed\",\"result\":{\"resultType\":\"task\"}}",
     "t-1", MCP_EPROTO, 0, 0},
    {DETAILED, "{" BASE ",\"status\":\"completed\",\"result\":{\"resultType\":"
               "\"input_required\",\"requestState\":\"s\"}}", "t-1", MCP_EPROTO, 0, 0},
    {DETAILED, "{" BASE ",\"status\":\"failed\"}", "t-1", MCP_EPROTO, 0, 0},
    {DETAILED, "{" BASE ",\"status\":\"failed\",\"error\":\"boom\"}", "t-1", MCP_EPROTO, 0, 0},
    {DETAILED, "{" BASE ",\"status\":\"failed\",\"error\":{\"message\":\"no code\"}}", "t-1",
     MCP_EPROTO, 0, 0},
    {DETAILED, "{" BASE ",\"status\":\"failed\",\"error\":{\"code\":-1}}", "t-1", MCP_EPROTO,
     0, 0},
    {DETAILED, "{" BASE ",\"status\":\"failed\",\"error\":{\"code\":\"-1\",\"message\":\"x\"}}",
     "t-1", MCP_EPROTO, 0, 0},
    {DETAILED, "{" BASE ",\"status\":\"failed\",\"error\":{\"code\":-33555555555555,"
               "\"message\":\"x\"}}", "t-1", MCP_EPROTO, 0, 0},
};

static void test_task_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_error_t jerr;
        json_t *obj = json_loads(cases[i].json, 0, &jerr);
        if (!obj)
            fail_msg("case %zu does not parse: %s", i, jerr.text);
        client_task_t task;
        mcp_error_t err = {0};
        int rc = client_task_read(obj, cases[i].kind == DETAILED, cases[i].expected_id, &task,
                                  &err);
        if (rc != cases[i].rc)
            fail_msg("case %zu: %s gives %d (%s), expected %d", i, cases[i].json, rc,
                     err.message, cases[i].rc);
        if (rc == MCP_OK) {
            assert_string_equal(task.id, "t-1");
            assert_int_equal(task.status, cases[i].status);
            assert_int_equal(task.has_poll_interval, cases[i].interval >= 0);
            if (cases[i].interval >= 0)
                assert_int_equal(task.poll_interval_ms, cases[i].interval);
        } else {
            assert_non_null(strstr(err.message, "invalid task"));
            assert_int_equal(err.code, 0);
        }
        mcp_error_clear(&err);
        json_decref(obj);
    }
}

/* The members of a detailed task are what the client acts on: they point
 * into the object read. */
static void test_detailed_members(void **state)
{
    (void)state;
    json_t *obj = json_loads("{" BASE ",\"status\":\"failed\",\"statusMessage\":\"over\","
                             "\"error\":{\"code\":-32001,\"message\":\"m\"}}", 0, NULL);
    client_task_t task;
    assert_int_equal(client_task_read(obj, true, "t-1", &task, NULL), MCP_OK);
    assert_ptr_equal(task.error, json_object_get(obj, "error"));
    assert_null(task.result);
    assert_null(task.input_requests);
    assert_string_equal(task.status_message, "over");
    json_decref(obj);

    obj = json_loads("{" BASE ",\"status\":\"completed\",\"result\":{\"content\":[]},"
                     "\"error\":{\"code\":1,\"message\":\"ignored\"}}", 0, NULL);
    assert_int_equal(client_task_read(obj, true, NULL, &task, NULL), MCP_OK);
    assert_ptr_equal(task.result, json_object_get(obj, "result"));
    assert_null(task.error); /* only the member of the status is read */
    json_decref(obj);

    obj = json_loads("{" BASE ",\"status\":\"input_required\",\"inputRequests\":{}}", 0, NULL);
    assert_int_equal(client_task_read(obj, true, NULL, &task, NULL), MCP_OK);
    assert_ptr_equal(task.input_requests, json_object_get(obj, "inputRequests"));
    /* Not detailed: the member is not read. */
    assert_int_equal(client_task_read(obj, false, NULL, &task, NULL), MCP_OK);
    assert_null(task.input_requests);
    json_decref(obj);
}

/* The legacy Task: ttl and pollInterval, not ttlMs and pollIntervalMs. */
static const struct {
    const char *json;
    int rc;
    json_int_t interval; /* -1: none given */
} legacy_cases[] = {
    {"{\"taskId\":\"t-1\",\"status\":\"working\",\"createdAt\":\"a\",\"lastUpdatedAt\":\"b\","
     "\"ttl\":300000,\"pollInterval\":1000}", MCP_OK, 1000},
    {"{\"taskId\":\"t-1\",\"status\":\"input_required\",\"createdAt\":\"a\","
     "\"lastUpdatedAt\":\"b\",\"ttl\":null}", MCP_OK, -1},
    /* A modern task is not a legacy one: its ttl is missing. */
    {"{" BASE ",\"status\":\"working\"}", MCP_EPROTO, 0},
    {"{\"taskId\":\"t-1\",\"status\":\"working\",\"createdAt\":\"a\",\"lastUpdatedAt\":\"b\","
     "\"ttl\":\"forever\"}", MCP_EPROTO, 0},
    {"{\"taskId\":\"t-1\",\"status\":\"working\",\"createdAt\":\"a\",\"lastUpdatedAt\":\"b\","
     "\"ttl\":1,\"pollInterval\":\"1s\"}", MCP_EPROTO, 0},
    {"{\"taskId\":\"t-1\",\"status\":\"paused\",\"createdAt\":\"a\",\"lastUpdatedAt\":\"b\","
     "\"ttl\":1}", MCP_EPROTO, 0},
};

static void test_legacy_task(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof legacy_cases / sizeof legacy_cases[0]; i++) {
        json_t *obj = json_loads(legacy_cases[i].json, 0, NULL);
        assert_non_null(obj);
        client_task_t task;
        mcp_error_t err = {0};
        int rc = client_task_read_legacy(obj, "t-1", &task, &err);
        if (rc != legacy_cases[i].rc)
            fail_msg("legacy case %zu: %s gives %d (%s)", i, legacy_cases[i].json, rc,
                     err.message);
        if (rc == MCP_OK) {
            assert_int_equal(task.has_poll_interval, legacy_cases[i].interval >= 0);
            if (legacy_cases[i].interval >= 0)
                assert_int_equal(task.poll_interval_ms, legacy_cases[i].interval);
        }
        mcp_error_clear(&err);
        json_decref(obj);
    }
}

/* The server's interval is honoured (digest 8.2: clients SHOULD), minutes
 * and hours included; only values no server means are bounded: under
 * 10 ms, and over a day; none keeps the current one. */
static void test_poll_interval(void **state)
{
    (void)state;
    client_task_t task = {.has_poll_interval = false};
    assert_int_equal(client_task_poll_interval(&task, 750), 750);
    task.has_poll_interval = true;
    task.poll_interval_ms = 250;
    assert_int_equal(client_task_poll_interval(&task, 750), 250);
    task.poll_interval_ms = 0;
    assert_int_equal(client_task_poll_interval(&task, 750), CLIENT_TASK_MIN_POLL_MS);
    task.poll_interval_ms = -5;
    assert_int_equal(client_task_poll_interval(&task, 750), CLIENT_TASK_MIN_POLL_MS);
    task.poll_interval_ms = 120000;
    assert_int_equal(client_task_poll_interval(&task, 750), 120000);
    task.poll_interval_ms = 3600000;
    assert_int_equal(client_task_poll_interval(&task, 750), 3600000);
    assert_int_equal(CLIENT_TASK_MAX_POLL_MS, 24 * 3600 * 1000);
    task.poll_interval_ms = CLIENT_TASK_MAX_POLL_MS + 1;
    assert_int_equal(client_task_poll_interval(&task, 750), CLIENT_TASK_MAX_POLL_MS);
    task.poll_interval_ms = INT64_MAX;
    assert_int_equal(client_task_poll_interval(&task, 750), CLIENT_TASK_MAX_POLL_MS);
}

static void test_final_statuses(void **state)
{
    (void)state;
    assert_false(client_task_status_final(CLIENT_TASK_WORKING));
    assert_false(client_task_status_final(CLIENT_TASK_INPUT_REQUIRED));
    assert_true(client_task_status_final(CLIENT_TASK_COMPLETED));
    assert_true(client_task_status_final(CLIENT_TASK_FAILED));
    assert_true(client_task_status_final(CLIENT_TASK_CANCELLED));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_table),
        cmocka_unit_test(test_detailed_members),
        cmocka_unit_test(test_legacy_task),
        cmocka_unit_test(test_poll_interval),
        cmocka_unit_test(test_final_statuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

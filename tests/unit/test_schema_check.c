/*
 * Tests for the test suite's schema checker (tests/support/schema_check.c):
 * hand-written instances against the official MCP schemas, whole server
 * messages per revision, and the guarantee that a schema keyword the checker
 * does not implement makes validation fail rather than pass.
 *
 * JSON in the tables uses ' for " so it stays readable; no case needs a
 * literal apostrophe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "schema_check.h"

static json_t *parse(const char *text)
{
    size_t len = strlen(text);
    char *json = malloc(len + 1);
    assert_non_null(json);
    for (size_t i = 0; i <= len; i++)
        json[i] = text[i] == '\'' ? '"' : text[i];
    json_error_t error;
    json_t *value = json_loads(json, JSON_DECODE_ANY, &error);
    if (!value)
        fail_msg("test JSON does not parse (%s): %s", error.text, json);
    free(json);
    return value;
}

/*
 * Checks an outcome: `failure` NULL means the check must pass; otherwise it
 * must fail with a reason containing `failure`.
 */
static void expect(int rc, const char *reason, const char *failure, const char *what)
{
    if (!failure) {
        if (rc != 0)
            fail_msg("%s: expected valid, got: %s", what, reason);
        return;
    }
    if (rc == 0)
        fail_msg("%s: expected a failure containing '%s', but it passed", what, failure);
    if (!strstr(reason, failure))
        fail_msg("%s: expected a failure containing '%s', got: %s", what, failure, reason);
}

/* ------------------------------------------------------------------------ */
/* Definitions of the official schemas.                                     */
/* ------------------------------------------------------------------------ */

struct definition_case {
    const char *revision;
    const char *definition;
    const char *instance;
    const char *failure; /* NULL: valid */
};

static const struct definition_case definition_cases[] = {
    /* Content blocks: the type const picks the block, and a bad one is named. */
    {"2026-07-28", "TextContent", "{'type':'text','text':'hi'}", NULL},
    {"2026-07-28", "CallToolResult",
     "{'resultType':'complete','content':[{'type':'text','text':'hi'}],'isError':false}", NULL},
    {"2026-07-28", "CallToolResult", "{'resultType':'complete','content':[{'type':'txt','text':'hi'}]}",
     "/content/0/type: value \"txt\" does not match const \"text\" (closest of 5 anyOf alternatives at /content/0)"},
    {"2026-07-28", "CallToolResult", "{'content':[]}", "(root): missing required property \"resultType\""},
    {"2026-07-28", "CallToolResult", "{'resultType':'complete','content':{}}",
     "/content: expected type \"array\", got object"},
    {"2026-07-28", "ImageContent", "{'type':'image','data':'iVBORw0KGgo=','mimeType':'image/png'}", NULL},
    {"2026-07-28", "ImageContent", "{'type':'image','data':'iVBORw0KGgo','mimeType':'image/png'}",
     "/data: value \"iVBORw0KGgo\" is not a valid byte: its length is not a multiple of 4"},
    {"2026-07-28", "ImageContent", "{'type':'image','data':'iVBO=w0K','mimeType':'image/png'}",
     "/data: value \"iVBO=w0K\" is not a valid byte: it contains a character outside the base64 alphabet"},
    /* Caching fields are required on DiscoverResult; ttlMs is an integer >= 0. */
    {"2026-07-28", "DiscoverResult",
     "{'resultType':'complete','supportedVersions':['2026-07-28'],'capabilities':{},'ttlMs':0,'cacheScope':'public'}",
     NULL},
    {"2026-07-28", "DiscoverResult",
     "{'resultType':'complete','supportedVersions':['2026-07-28'],'capabilities':{},'cacheScope':'public'}",
     "(root): missing required property \"ttlMs\""},
    {"2026-07-28", "DiscoverResult",
     "{'resultType':'complete','supportedVersions':['2026-07-28'],'capabilities':{},'ttlMs':-1,'cacheScope':'public'}",
     "/ttlMs: -1 is less than the minimum 0"},
    {"2026-07-28", "DiscoverResult",
     "{'resultType':'complete','supportedVersions':['2026-07-28'],'capabilities':{},'ttlMs':1.5,'cacheScope':'public'}",
     "/ttlMs: expected type \"integer\", got number"},
    {"2026-07-28", "DiscoverResult", /* 1.0 is an integer in JSON Schema */
     "{'resultType':'complete','supportedVersions':['2026-07-28'],'capabilities':{},'ttlMs':1.0,'cacheScope':'public'}",
     NULL},
    {"2026-07-28", "DiscoverResult",
     "{'resultType':'complete','supportedVersions':['2026-07-28'],'capabilities':{},'ttlMs':0,'cacheScope':'shared'}",
     "/cacheScope: value \"shared\" is not in enum [\"private\",\"public\"]"},
    /* additionalProperties as a schema: every extra capability must be an object. */
    {"2026-07-28", "ServerCapabilities", "{'experimental':{'x':{}}}", NULL},
    {"2026-07-28", "ServerCapabilities", "{'experimental':{'x':5}}",
     "/experimental/x: expected type \"object\", got integer"},
    /* Error responses: id is optional but never null. */
    {"2026-07-28", "JSONRPCErrorResponse", "{'jsonrpc':'2.0','error':{'code':-32700,'message':'Parse error'}}", NULL},
    {"2026-07-28", "JSONRPCErrorResponse",
     "{'jsonrpc':'2.0','id':null,'error':{'code':-32700,'message':'Parse error'}}",
     "/id: expected type [\"string\",\"integer\"], got null"},
    {"2026-07-28", "JSONRPCErrorResponse", "{'jsonrpc':'1.0','id':1,'error':{'code':-32600,'message':'m'}}",
     "/jsonrpc: value \"1.0\" does not match const \"2.0\""},
    {"2026-07-28", "JSONRPCErrorResponse", "{'jsonrpc':'2.0','id':1,'error':{'code':-32600.5,'message':'m'}}",
     "/error/code: expected type \"integer\", got number"},
    /* allOf: the typed errors pin the code and require data. */
    {"2026-07-28", "HeaderMismatchError", "{'jsonrpc':'2.0','id':1,'error':{'code':-32600,'message':'m'}}",
     "/error/code: value -32600 does not match const -32020"},
    {"2026-07-28", "UnsupportedProtocolVersionError", "{'jsonrpc':'2.0','id':1,'error':{'code':-32022,'message':'m'}}",
     "/error: missing required property \"data\""},
    /* maxItems, maximum and the uri / uri-template formats. */
    {"2026-07-28", "CompleteResult",
     "{'resultType':'complete','completion':{'values':['0','1','2','3','4','5','6','7','8','9','10','11','12','13',"
     "'14','15','16','17','18','19','20','21','22','23','24','25','26','27','28','29','30','31','32','33','34','35',"
     "'36','37','38','39','40','41','42','43','44','45','46','47','48','49','50','51','52','53','54','55','56','57',"
     "'58','59','60','61','62','63','64','65','66','67','68','69','70','71','72','73','74','75','76','77','78','79',"
     "'80','81','82','83','84','85','86','87','88','89','90','91','92','93','94','95','96','97','98','99','100']}}",
     "/completion/values: 101 items exceed maxItems 100"},
    {"2026-07-28", "Annotations", "{'priority':1}", NULL},
    {"2026-07-28", "Annotations", "{'priority':1.5}", "/priority: 1.5 is greater than the maximum 1"},
    {"2026-07-28", "Implementation", "{'name':'s','version':'1','websiteUrl':'https://example.com/x'}", NULL},
    {"2026-07-28", "Implementation", "{'name':'s','version':'1','websiteUrl':'example.com'}",
     "/websiteUrl: value \"example.com\" is not a valid uri: it has no scheme"},
    {"2026-07-28", "Implementation", "{'name':'s','version':'1','websiteUrl':'https://example.com/a b'}",
     "is not a valid uri: it contains whitespace or a control character"},
    {"2026-07-28", "ResourceTemplate", "{'name':'files','uriTemplate':'file:///{path}'}", NULL},
    {"2026-07-28", "ResourceTemplate", "{'name':'files','uriTemplate':'file:///{path'}",
     "/uriTemplate: value \"file:///{path\" is not a valid uri-template: it leaves '{' unclosed"},
    {"2026-07-28", "ResourceTemplate", "{'name':'files','uriTemplate':'file:///{}'}",
     "is not a valid uri-template: it has an empty expression \"{}\""},
    /* Tool input schemas are objects. */
    {"2026-07-28", "Tool", "{'name':'echo','inputSchema':{'type':'object','properties':{}}}", NULL},
    {"2026-07-28", "Tool", "{'name':'echo','inputSchema':{'type':'array'}}",
     "/inputSchema/type: value \"array\" does not match const \"object\""},
    /* MRTR: nested input requests are checked too. */
    {"2026-07-28", "InputRequiredResult",
     "{'resultType':'input_required','inputRequests':{'login':{'method':'elicitation/create','params':{"
     "'mode':'form','message':'Name?','requestedSchema':{'type':'object','properties':{'name':{'type':'string'}}}}}}}",
     NULL},
    {"2026-07-28", "InputRequiredResult", "{'resultType':'input_required','inputRequests':{'login':{'method':'nope'}}}",
     "/inputRequests/login"},
    /* 2026 results need resultType, 2025 results do not have it. */
    {"2026-07-28", "EmptyResult", "{'resultType':'complete'}", NULL},
    {"2026-07-28", "EmptyResult", "{}", "(root): missing required property \"resultType\""},
    {"2025-11-25", "EmptyResult", "{}", NULL},
    {"2025-11-25", "InitializeResult",
     "{'protocolVersion':'2025-11-25','capabilities':{'logging':{}},'serverInfo':{'name':'s','version':'1'}}", NULL},
    {"2025-11-25", "InitializeResult", "{'protocolVersion':'2025-11-25','capabilities':{}}",
     "(root): missing required property \"serverInfo\""},
    /* A type list that includes null. */
    {"2025-11-25", "Task",
     "{'taskId':'t1','status':'working','createdAt':'2025-11-25T10:00:00Z','lastUpdatedAt':'2025-11-25T10:00:00Z','ttl':null}",
     NULL},
    {"2025-11-25", "Task",
     "{'taskId':'t1','status':'working','createdAt':'2025-11-25T10:00:00Z','lastUpdatedAt':'2025-11-25T10:00:00Z','ttl':'1h'}",
     "/ttl: expected type [\"integer\",\"null\"], got string"},
    /* Unknown names fail instead of passing. */
    {"2026-07-28", "NoSuchResult", "{}", "the schema has no definition \"NoSuchResult\""},
    {"2025-06-18", "EmptyResult", "{}", "no schema for revision \"2025-06-18\""},
};

static void test_definitions(void **state)
{
    for (size_t i = 0; i < sizeof definition_cases / sizeof definition_cases[0]; i++) {
        const struct definition_case *c = &definition_cases[i];
        char what[256];
        snprintf(what, sizeof what, "case %zu (%s %s %s)", i, c->revision, c->definition, c->instance);
        json_t *instance = parse(c->instance);
        char reason[SCHEMA_CHECK_REASON_MAX] = "";
        int rc = schema_check_definition(c->revision, c->definition, instance, reason, sizeof reason);
        json_decref(instance);
        expect(rc, reason, c->failure, what);
    }
}

/* ------------------------------------------------------------------------ */
/* Every method of each revision maps to its own result definition.          */
/* ------------------------------------------------------------------------ */

struct method_case {
    const char *revision;
    const char *method;
    const char *result;       /* a valid result */
    const char *bare_failure; /* how the revision's bare result fails, NULL when it is valid */
};

/* A result with only what every result of the revision has. */
static const char bare_2026[] = "{'resultType':'complete','ttlMs':0,'cacheScope':'public'}";
static const char bare_2025[] = "{}";

static const struct method_case method_cases[] = {
    {"2026-07-28", "server/discover",
     "{'resultType':'complete','supportedVersions':['2026-07-28'],'capabilities':{'tools':{}},'ttlMs':0,'cacheScope':'public'}",
     "/result: missing required property \"capabilities\""},
    {"2026-07-28", "resources/list",
     "{'resultType':'complete','resources':[{'name':'a','uri':'file:///a'}],'ttlMs':0,'cacheScope':'private'}",
     "/result: missing required property \"resources\""},
    {"2026-07-28", "resources/templates/list",
     "{'resultType':'complete','resourceTemplates':[{'name':'t','uriTemplate':'file:///{path}'}],'ttlMs':5,'cacheScope':'public'}",
     "/result: missing required property \"resourceTemplates\""},
    {"2026-07-28", "resources/read",
     "{'resultType':'complete','contents':[{'uri':'file:///a','text':'hello'}],'ttlMs':0,'cacheScope':'private'}",
     "/result: missing required property \"contents\""},
    {"2026-07-28", "subscriptions/listen",
     "{'resultType':'complete','_meta':{'io.modelcontextprotocol/subscriptionId':'sub-1'}}",
     "/result: missing required property \"_meta\""},
    {"2026-07-28", "prompts/list", "{'resultType':'complete','prompts':[{'name':'p'}],'ttlMs':0,'cacheScope':'public'}",
     "/result: missing required property \"prompts\""},
    {"2026-07-28", "prompts/get",
     "{'resultType':'complete','messages':[{'role':'user','content':{'type':'text','text':'hi'}}]}",
     "/result: missing required property \"messages\""},
    {"2026-07-28", "tools/list",
     "{'resultType':'complete','tools':[{'name':'echo','inputSchema':{'type':'object'}}],'ttlMs':0,'cacheScope':'public'}",
     "/result: missing required property \"tools\""},
    {"2026-07-28", "tools/call", "{'resultType':'complete','content':[]}",
     "/result: missing required property \"content\""},
    {"2026-07-28", "completion/complete", "{'resultType':'complete','completion':{'values':['a'],'hasMore':false}}",
     "/result: missing required property \"completion\""},

    {"2025-11-25", "initialize",
     "{'protocolVersion':'2025-11-25','capabilities':{},'serverInfo':{'name':'s','version':'1'}}",
     "/result: missing required property \"capabilities\""},
    {"2025-11-25", "ping", "{}", NULL},
    {"2025-11-25", "resources/list", "{'resources':[{'name':'a','uri':'file:///a'}]}",
     "/result: missing required property \"resources\""},
    {"2025-11-25", "resources/templates/list", "{'resourceTemplates':[]}",
     "/result: missing required property \"resourceTemplates\""},
    {"2025-11-25", "resources/read", "{'contents':[{'uri':'file:///a','blob':'AAEC'}]}",
     "/result: missing required property \"contents\""},
    {"2025-11-25", "resources/subscribe", "{}", NULL},
    {"2025-11-25", "resources/unsubscribe", "{}", NULL},
    {"2025-11-25", "prompts/list", "{'prompts':[]}", "/result: missing required property \"prompts\""},
    {"2025-11-25", "prompts/get", "{'messages':[]}", "/result: missing required property \"messages\""},
    {"2025-11-25", "tools/list", "{'tools':[]}", "/result: missing required property \"tools\""},
    {"2025-11-25", "tools/call", "{'content':[{'type':'text','text':'x'}]}",
     "/result: missing required property \"content\""},
    {"2025-11-25", "tasks/get",
     "{'taskId':'t1','status':'completed','createdAt':'2025-11-25T10:00:00Z','lastUpdatedAt':'2025-11-25T10:00:00Z','ttl':60000}",
     "/result: missing required property \"createdAt\""},
    {"2025-11-25", "tasks/result", "{'content':[]}", NULL},
    {"2025-11-25", "tasks/cancel",
     "{'taskId':'t1','status':'cancelled','createdAt':'2025-11-25T10:00:00Z','lastUpdatedAt':'2025-11-25T10:00:00Z','ttl':null}",
     "/result: missing required property \"createdAt\""},
    {"2025-11-25", "tasks/list", "{'tasks':[]}", "/result: missing required property \"tasks\""},
    {"2025-11-25", "logging/setLevel", "{}", NULL},
    {"2025-11-25", "completion/complete", "{'completion':{'values':[]}}",
     "/result: missing required property \"completion\""},
};

static int check_result(const char *revision, const char *method, const char *result_text, char *reason,
                        size_t reason_size)
{
    json_t *message = json_pack("{s:s,s:i,s:o}", "jsonrpc", "2.0", "id", 7, "result", parse(result_text));
    assert_non_null(message);
    int rc = schema_check_server_message(message, method, revision, reason, reason_size);
    json_decref(message);
    return rc;
}

static void test_result_definition_per_method(void **state)
{
    for (size_t i = 0; i < sizeof method_cases / sizeof method_cases[0]; i++) {
        const struct method_case *c = &method_cases[i];
        char what[128];
        char reason[SCHEMA_CHECK_REASON_MAX] = "";

        snprintf(what, sizeof what, "%s %s, valid result", c->revision, c->method);
        expect(check_result(c->revision, c->method, c->result, reason, sizeof reason), reason, NULL, what);

        snprintf(what, sizeof what, "%s %s, bare result", c->revision, c->method);
        const char *bare = strcmp(c->revision, "2026-07-28") == 0 ? bare_2026 : bare_2025;
        expect(check_result(c->revision, c->method, bare, reason, sizeof reason), reason, c->bare_failure, what);
    }
}

/* ------------------------------------------------------------------------ */
/* Whole messages.                                                           */
/* ------------------------------------------------------------------------ */

struct message_case {
    const char *revision;
    const char *method; /* of the request answered, or NULL */
    const char *message;
    const char *failure; /* NULL: valid */
};

static const struct message_case message_cases[] = {
    /* 2026: resultType chooses between the result and InputRequiredResult. */
    {"2026-07-28", "tools/call",
     "{'jsonrpc':'2.0','id':1,'result':{'resultType':'complete','content':[{'type':'text','text':'ok'}]}}", NULL},
    {"2026-07-28", "tools/call", "{'jsonrpc':'2.0','id':1,'result':{'resultType':'input_required','requestState':'s1'}}",
     NULL},
    {"2026-07-28", "tools/call",
     "{'jsonrpc':'2.0','id':1,'result':{'resultType':'complete','content':[{'type':'txt','text':'ok'}]}}",
     "/result/content/0/type: value \"txt\" does not match const \"text\""},
    {"2026-07-28", "resources/read",
     "{'jsonrpc':'2.0','id':'r','result':{'resultType':'input_required','inputRequests':{'roots':{'method':'roots/list'}}}}",
     NULL},
    {"2026-07-28", "prompts/get",
     "{'jsonrpc':'2.0','id':'r','result':{'resultType':'input_required','inputRequests':{'k':{'method':'bogus'}}}}",
     "/result/inputRequests/k"},
    /* Only tools/call, resources/read and prompts/get may ask for input. */
    {"2026-07-28", "tools/list", "{'jsonrpc':'2.0','id':1,'result':{'resultType':'input_required','requestState':'s'}}",
     "/result: missing required property"},
    /* The envelope is checked as well as the result. */
    {"2026-07-28", "tools/list", "{'jsonrpc':'2.0','id':1,'result':{'tools':[],'ttlMs':0,'cacheScope':'public'}}",
     "/result: missing required property \"resultType\""},
    {"2026-07-28", "tools/call", "{'jsonrpc':'2.0','id':null,'result':{'resultType':'complete','content':[]}}",
     "/id: expected type [\"string\",\"integer\"], got null"},
    {"2026-07-28", "tools/call", "{'id':1,'result':{'resultType':'complete','content':[]}}",
     "(root): missing required property \"jsonrpc\""},
    {"2026-07-28", "ping", "{'jsonrpc':'2.0','id':1,'result':{'resultType':'complete'}}",
     "/result: revision 2026-07-28 defines no result for method \"ping\""},
    {"2026-07-28", NULL, "{'jsonrpc':'2.0','id':1,'result':{'resultType':'complete'}}",
     "/result: a result response is checked against the method it answers"},
    /* Errors: the generic shape, and the typed codes. */
    {"2026-07-28", NULL, "{'jsonrpc':'2.0','error':{'code':-32700,'message':'Parse error'}}", NULL},
    {"2026-07-28", "tools/call", "{'jsonrpc':'2.0','id':1,'error':{'code':-32601,'message':'Method not found'}}", NULL},
    {"2026-07-28", NULL, "{'jsonrpc':'2.0','id':null,'error':{'code':-32700,'message':'Parse error'}}",
     "/id: expected type [\"string\",\"integer\"], got null"},
    {"2026-07-28", NULL, "{'jsonrpc':'2.0','id':1,'error':{'code':-32602}}",
     "/error: missing required property \"message\""},
    {"2026-07-28", NULL,
     "{'jsonrpc':'2.0','id':1,'error':{'code':-32022,'message':'Unsupported protocol version',"
     "'data':{'requested':'1999-01-01','supported':['2026-07-28']}}}",
     NULL},
    {"2026-07-28", NULL, "{'jsonrpc':'2.0','id':1,'error':{'code':-32022,'message':'Unsupported protocol version'}}",
     "/error: missing required property \"data\""},
    {"2026-07-28", NULL,
     "{'jsonrpc':'2.0','id':1,'error':{'code':-32021,'message':'Missing capability','data':{}}}",
     "/error/data: missing required property \"requiredCapabilities\""},
    {"2025-11-25", NULL, "{'jsonrpc':'2.0','id':1,'error':{'code':-32042,'message':'URL elicitation required'}}",
     "/error: missing required property \"data\""},
    {"2025-11-25", NULL, "{'jsonrpc':'2.0','id':1,'error':{'code':-32022,'message':'any data is fine in 2025'}}", NULL},
    /* Notifications: matched to the ServerNotification member by method. */
    {"2026-07-28", NULL, "{'jsonrpc':'2.0','method':'notifications/tools/list_changed'}", NULL},
    {"2026-07-28", NULL,
     "{'jsonrpc':'2.0','method':'notifications/message','params':{'level':'info','data':{'n':1}}}", NULL},
    {"2026-07-28", NULL, "{'jsonrpc':'2.0','method':'notifications/message','params':{'level':'loud','data':1}}",
     "/params/level: value \"loud\" is not in enum"},
    {"2026-07-28", NULL, "{'jsonrpc':'2.0','method':'notifications/message'}",
     "(root): missing required property \"params\""},
    {"2026-07-28", NULL, "{'jsonrpc':'2.0','method':'notifications/elicitation/complete','params':{'elicitationId':'e'}}",
     "/method: \"notifications/elicitation/complete\" is not in ServerNotification of revision 2026-07-28"},
    {"2025-11-25", NULL, "{'jsonrpc':'2.0','method':'notifications/elicitation/complete','params':{'elicitationId':'e'}}",
     NULL},
    {"2025-11-25", NULL, "{'jsonrpc':'2.0','method':'notifications/initialized'}",
     "/method: \"notifications/initialized\" is not in ServerNotification of revision 2025-11-25"},
    /* Server-to-client requests exist only before 2026. */
    {"2025-11-25", NULL, "{'jsonrpc':'2.0','id':'s1','method':'ping'}", NULL},
    {"2025-11-25", NULL, "{'jsonrpc':'2.0','id':'s1','method':'tools/call','params':{'name':'x'}}",
     "/method: \"tools/call\" is not in ServerRequest of revision 2025-11-25"},
    {"2025-11-25", NULL, "{'jsonrpc':'2.0','id':null,'method':'ping'}",
     "/id: expected type [\"string\",\"integer\"], got null"},
    {"2026-07-28", NULL, "{'jsonrpc':'2.0','id':'s1','method':'roots/list'}",
     "/method: revision 2026-07-28 has no server-to-client requests (got \"roots/list\")"},
    /* 2025 tools/call may answer a task instead. */
    {"2025-11-25", "tools/call",
     "{'jsonrpc':'2.0','id':1,'result':{'task':{'taskId':'t1','status':'working','createdAt':'2025-11-25T10:00:00Z',"
     "'lastUpdatedAt':'2025-11-25T10:00:00Z','ttl':null}}}",
     NULL},
    {"2025-11-25", "tools/call", "{'jsonrpc':'2.0','id':1,'result':{'content':[{'type':'image','data':'AA'}]}}",
     "/result/content/0: missing required property \"mimeType\" (closest of 5 anyOf alternatives at /result/content/0)"
     " (closest of 2 anyOf alternatives at /result)"},
    /* Not a message at all. */
    {"2026-07-28", "tools/call", "{'jsonrpc':'2.0','id':1,'result':{'resultType':'complete','content':[]},'error':{}}",
     "(root): a response carries \"result\" or \"error\", not both"},
    {"2026-07-28", NULL, "{'jsonrpc':'2.0','id':1}", "(root): not a JSON-RPC message"},
    {"2026-07-28", NULL, "[1]", "(root): a JSON-RPC message is an object, got array"},
    {"2025-03-26", NULL, "{'jsonrpc':'2.0','method':'notifications/tools/list_changed'}",
     "no schema for revision \"2025-03-26\""},
};

static void test_server_messages(void **state)
{
    for (size_t i = 0; i < sizeof message_cases / sizeof message_cases[0]; i++) {
        const struct message_case *c = &message_cases[i];
        char what[256];
        snprintf(what, sizeof what, "case %zu (%s, answer to %s)", i, c->revision, c->method ? c->method : "-");
        json_t *message = parse(c->message);
        char reason[SCHEMA_CHECK_REASON_MAX] = "";
        int rc = schema_check_server_message(message, c->method, c->revision, reason, sizeof reason);
        json_decref(message);
        expect(rc, reason, c->failure, what);
    }
}

static void test_assertion_macros_pass_valid_messages(void **state)
{
    json_t *message = parse("{'jsonrpc':'2.0','id':3,'result':{'resultType':'complete','content':[]}}");
    MCP_ASSERT_SCHEMA_VALID(message, "tools/call", "2026-07-28");
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(json_object_get(message, "result"), "CallToolResult", "2026-07-28");
    json_decref(message);
}

/* ------------------------------------------------------------------------ */
/* The validator on its own: hand-made schema documents.                     */
/* ------------------------------------------------------------------------ */

struct inline_case {
    const char *schema;   /* a document with $defs */
    const char *instance; /* validated against $defs/X */
    const char *failure;  /* NULL: valid */
};

static const struct inline_case inline_cases[] = {
    /* A keyword the checker does not implement fails, even where it would not matter. */
    {"{'$defs':{'X':{'type':'object','patternProperties':{'^a':{'type':'string'}}}}}", "{'a':1}",
     "(root): schema problem in $defs/X: unsupported keyword \"patternProperties\""},
    {"{'$defs':{'X':{'type':'object','patternProperties':{'^a':{'type':'string'}}}}}", "{}",
     "unsupported keyword \"patternProperties\""},
    {"{'$defs':{'X':{'type':'object','properties':{'s':{'type':'string','minLength':3}}}}}", "{'s':'ab'}",
     "/s: schema problem in $defs/X: unsupported keyword \"minLength\""},
    /* ...and a later anyOf alternative that matches cannot hide it. */
    {"{'$defs':{'X':{'anyOf':[{'minLength':3},{'type':'string'}]}}}", "'ab'", "unsupported keyword \"minLength\""},
    {"{'$defs':{'X':{'$ref':'other.json#/$defs/Y'}}}", "{}", "unsupported $ref \"other.json#/$defs/Y\""},
    {"{'$defs':{'X':{'$ref':'#/$defs/Missing'}}}", "{}", "$ref \"#/$defs/Missing\" names no definition"},
    {"{'$defs':{'X':{'type':'string','format':'email'}}}", "'a@b.c'", "unsupported format \"email\""},
    {"{'$defs':{'X':{'type':'array','items':[{'type':'string'}]}}}", "['a']", "prefixItems form) is unsupported"},
    {"{'$defs':{'X':{'type':'strin'}}}", "'a'", "unknown type \"strin\""},
    {"{'$defs':{'X':{'$ref':'#/$defs/X'}}}", "1", "schemas nest deeper than"},
    /* Annotations never affect the outcome. */
    {"{'$defs':{'X':{'title':'t','description':'d','$comment':'c','default':1,'examples':[1],'type':'integer'}}}",
     "1", NULL},
    /* additionalProperties false and as a schema; properties it does not cover. */
    {"{'$defs':{'X':{'properties':{'a':{}},'additionalProperties':false}}}", "{'a':1}", NULL},
    {"{'$defs':{'X':{'properties':{'a':{}},'additionalProperties':false}}}", "{'a':1,'b/c~':2}",
     "(root): property \"b/c~\" is not allowed (additionalProperties is false)"},
    {"{'$defs':{'X':{'additionalProperties':{'type':'integer'}}}}", "{'a/b':1,'c~d':'x'}",
     "/c~0d: expected type \"integer\", got string"},
    {"{'$defs':{'X':{'items':{'additionalProperties':{'type':'integer'}}}}}", "[{},{'a/b':'x'}]",
     "/1/a~1b: expected type \"integer\", got string"},
    /* Boolean schemas. */
    {"{'$defs':{'X':{'properties':{'a':false,'b':true}}}}", "{'b':[]}", NULL},
    {"{'$defs':{'X':{'properties':{'a':false,'b':true}}}}", "{'a':0}", "/a: no value is allowed here (schema false)"},
    /* const and enum compare numbers by value and containers deeply. */
    {"{'$defs':{'X':{'const':2}}}", "2.0", NULL},
    {"{'$defs':{'X':{'enum':[{'a':[1,'x']},3]}}}", "{'a':[1.0,'x']}", NULL},
    {"{'$defs':{'X':{'enum':[{'a':[1,'x']},3]}}}", "{'a':[1,'y']}", "(root): value {\"a\":[1,\"y\"]} is not in enum"},
    {"{'$defs':{'X':{'const':true}}}", "1", "(root): value 1 does not match const true"},
    /* anyOf explains the alternative whose discriminating const the instance matches. */
    {"{'$defs':{'X':{'anyOf':[{'properties':{'k':{'const':'a'}},'required':['x']},"
     "{'properties':{'k':{'const':'b'}},'required':['y']}]}}}",
     "{'k':'b'}", "(root): missing required property \"y\" (closest of 2 anyOf alternatives at (root))"},
    {"{'$defs':{'X':{'anyOf':[{'properties':{'k':{'const':'a'}},'required':['x']},"
     "{'properties':{'k':{'const':'b'}},'required':['y']}]}}}",
     "{'k':'a','x':0}", NULL},
    /* ...and otherwise the one that got deepest into the instance. */
    {"{'$defs':{'X':{'anyOf':[{'required':['z']},{'properties':{'a':{'properties':{'b':{'type':'string'}}}}}]}}}",
     "{'a':{'b':1}}", "/a/b: expected type \"string\", got integer"},
    /* propertyNames checks every member name as a string. */
    {"{'$defs':{'X':{'propertyNames':{'const':'a'}}}}", "{'a':1}", NULL},
    {"{'$defs':{'X':{'propertyNames':{'const':'a'}}}}", "{'a':1,'b':2}",
     "/b: value \"b\" does not match const \"a\""},
    {"{'$defs':{'X':{'propertyNames':{'type':'integer'}}}}", "[1]", NULL},
    /* allOf needs every member. */
    {"{'$defs':{'X':{'allOf':[{'minimum':1},{'maximum':3}]}}}", "2", NULL},
    {"{'$defs':{'X':{'allOf':[{'minimum':1},{'maximum':3}]}}}", "4", "(root): 4 is greater than the maximum 3"},
    /* base64 padding rules. */
    {"{'$defs':{'X':{'format':'byte'}}}", "''", NULL},
    {"{'$defs':{'X':{'format':'byte'}}}", "'AA=='", NULL},
    {"{'$defs':{'X':{'format':'byte'}}}", "'A==='", "it has more than two '=' of padding"},
    {"{'$defs':{'X':{'format':'byte'}}}", "'AA=A'", "it contains a character outside the base64 alphabet"},
    /* uri needs a scheme; uri-template braces must pair. */
    {"{'$defs':{'X':{'format':'uri'}}}", "'urn:x-mcp:1'", NULL},
    {"{'$defs':{'X':{'format':'uri'}}}", "'/relative/path'", "it does not start with a scheme"},
    {"{'$defs':{'X':{'format':'uri-template'}}}", "'a}b'", "it has '}' without '{'"},
    {"{'$defs':{'X':{'format':'uri-template'}}}", "'{a{b}}'", "it nests '{'"},
    /* Type-specific keywords ignore other types, as in JSON Schema. */
    {"{'$defs':{'X':{'minimum':0,'maxItems':0,'required':['a'],'format':'uri'}}}", "'not a uri?'",
     "is not a valid uri"},
    {"{'$defs':{'X':{'minimum':0,'maxItems':0,'required':['a'],'properties':{'a':false},"
     "'additionalProperties':false,'items':false}}}",
     "'text'", NULL},
    {"{'$defs':{'X':{'format':'uri','const':3,'minimum':5}}}", "3", "(root): 3 is less than the minimum 5"},
};

static void test_validator_on_inline_schemas(void **state)
{
    for (size_t i = 0; i < sizeof inline_cases / sizeof inline_cases[0]; i++) {
        const struct inline_case *c = &inline_cases[i];
        char what[256];
        snprintf(what, sizeof what, "case %zu (%s on %s)", i, c->instance, c->schema);
        json_t *schema = parse(c->schema);
        json_t *instance = parse(c->instance);
        char reason[SCHEMA_CHECK_REASON_MAX] = "";
        int rc = schema_check_validate(schema, "X", instance, reason, sizeof reason);
        json_decref(instance);
        json_decref(schema);
        expect(rc, reason, c->failure, what);
    }
}

/* The schema problem itself is the reason, not a failed alternative. */
static void test_unsupported_keyword_in_any_of_is_the_reason(void **state)
{
    json_t *schema = parse("{'$defs':{'X':{'anyOf':[{'type':'string'},{'pattern':'^a'}]}}}");
    json_t *instance = parse("1");
    char reason[SCHEMA_CHECK_REASON_MAX] = "";
    assert_int_equal(schema_check_validate(schema, "X", instance, reason, sizeof reason), -1);
    assert_string_equal(reason, "(root): schema problem in $defs/X: unsupported keyword \"pattern\"");
    json_decref(instance);
    json_decref(schema);
}

/* ------------------------------------------------------------------------ */
/* Loading.                                                                  */
/* ------------------------------------------------------------------------ */

static void test_load_is_cached_per_path(void **state)
{
    char reason[SCHEMA_CHECK_REASON_MAX] = "";
    const json_t *first = schema_check_load(MCP_TEST_DATA_DIR "/schema-2026-07-28.json", reason, sizeof reason);
    assert_non_null(first);
    assert_ptr_equal(first, schema_check_load(MCP_TEST_DATA_DIR "/schema-2026-07-28.json", NULL, 0));
    assert_ptr_equal(first, schema_check_revision("2026-07-28", NULL, 0));

    const json_t *legacy = schema_check_revision("2025-11-25", NULL, 0);
    assert_non_null(legacy);
    assert_ptr_not_equal(first, legacy);
}

static void test_load_failures_are_reported(void **state)
{
    char reason[SCHEMA_CHECK_REASON_MAX] = "";
    assert_null(schema_check_load(MCP_TEST_DATA_DIR "/no-such-schema.json", reason, sizeof reason));
    assert_non_null(strstr(reason, "no-such-schema.json"));

    assert_null(schema_check_load(NULL, reason, sizeof reason));
    assert_null(schema_check_revision("2024-11-05", reason, sizeof reason));
    assert_string_equal(reason, "no schema for revision \"2024-11-05\" (have 2026-07-28, 2025-11-25)");

    json_t *no_defs = parse("{'definitions':{}}");
    assert_int_equal(schema_check_validate(no_defs, "X", no_defs, reason, sizeof reason), -1);
    assert_string_equal(reason, "the schema has no definition \"X\"");
    json_decref(no_defs);
}

/* A reason that does not fit is cut, still NUL-terminated; no buffer at all is fine. */
static void test_reason_buffer_is_optional_and_bounded(void **state)
{
    json_t *instance = parse("{'content':[]}");
    char small[8];
    memset(small, 'x', sizeof small);
    assert_int_equal(schema_check_definition("2026-07-28", "CallToolResult", instance, small, sizeof small), -1);
    assert_string_equal(small, "(root):");
    assert_int_equal(schema_check_definition("2026-07-28", "CallToolResult", instance, NULL, 0), -1);
    json_decref(instance);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_definitions),
        cmocka_unit_test(test_result_definition_per_method),
        cmocka_unit_test(test_server_messages),
        cmocka_unit_test(test_assertion_macros_pass_valid_messages),
        cmocka_unit_test(test_validator_on_inline_schemas),
        cmocka_unit_test(test_unsupported_keyword_in_any_of_is_the_reason),
        cmocka_unit_test(test_load_is_cached_per_path),
        cmocka_unit_test(test_load_failures_are_reported),
        cmocka_unit_test(test_reason_buffer_is_optional_and_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

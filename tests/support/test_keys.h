/*
 * test_keys: keys the tests sign with, each a fixed, well-known text so
 * that a signature can be checked independently (OpenSSL) and a failure
 * reproduced. Never a secret: these keys are public.
 */
#ifndef MCP_TEST_KEYS_H
#define MCP_TEST_KEYS_H

/* A P-256 key (PKCS#8 PEM) made with `openssl genpkey -algorithm EC
 * -pkeyopt ec_paramgen_curve:P-256`. */
static const char TEST_KEY_P256_PEM[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgjwr5MwN56KH6hbBi\n"
    "sP/CwUrzCPJDXRqnpUARbYDyN4WhRANCAAQj6XXaZvvSfeBm4PDjMEzv9sJBx++J\n"
    "Bp8akXz39L10z/AppPCx7ak7TitH79YLQtKuP4VnHE1sLoG8eX6axoAz\n"
    "-----END PRIVATE KEY-----\n";

#endif

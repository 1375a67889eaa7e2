/* Fuzzes the JSON recognizer of response_format json_object
 * (runtime/serve/srv_json_filter.c) against jansson: the input, fed whole
 * and byte by byte (which must agree), is a complete JSON object for the
 * recognizer only if jansson parses it as one (the recognizer is stricter
 * only within its documented limits: nesting depth, whitespace runs,
 * nothing after the object). Nothing may crash. */
#include "srv_json_filter.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ft_srv_json_t whole, bytes;
    ft_srv_json_init(&whole);
    ft_srv_json_init(&bytes);
    const int a = ft_srv_json_feed(&whole, (const char *)data, size) && ft_srv_json_done(&whole);
    int b = 1;
    for (size_t i = 0; i < size && b; i++)
        b = ft_srv_json_feed(&bytes, (const char *)data + i, 1);
    b = b && ft_srv_json_done(&bytes);
    if (a != b) __builtin_trap();
    if (a) {
        json_error_t e;
        json_t *v = json_loadb((const char *)data, size, JSON_ALLOW_NUL, &e);
        /* jansson refuses lone surrogate escapes (\ud800), which the JSON
         * grammar allows and the recognizer follows, and numbers too large
         * for a double or a 64-bit integer (the grammar has no bound) */
        if (!v && !strstr(e.text, "nicode") && !strstr(e.text, "overflow") &&
            !strstr(e.text, "too big"))
            __builtin_trap();
        if (v && !json_is_object(v)) __builtin_trap();
        json_decref(v);
    }
    return 0;
}

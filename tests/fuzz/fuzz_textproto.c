/* The text format parser on arbitrary bytes, as a hardware profile: it
 * must return an error or a message, never crash; a message it accepts
 * prints to text that parses again to the same text. */
#include "../../runtime/format/textproto.h"
#include "hwprofile.pb-c.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ProtobufCMessage *m = NULL;
    ft_status_t st = ft_textproto_parse(&fthw__profile__descriptor, (const char *)data, size, "fuzz", &m);
    if (st) {
        ft_status_free(st);
        return 0;
    }
    char *t1 = NULL, *t2 = NULL;
    size_t n1 = 0, n2 = 0;
    if (ft_textproto_print(m, NULL, &t1, &n1))
        abort();
    ProtobufCMessage *m2 = NULL;
    if (ft_textproto_parse(&fthw__profile__descriptor, t1, n1, "reprint", &m2))
        abort();
    if (ft_textproto_print(m2, NULL, &t2, &n2) || n1 != n2 || memcmp(t1, t2, n1) != 0)
        abort();
    free(t1);
    free(t2);
    protobuf_c_message_free_unpacked(m2, NULL);
    protobuf_c_message_free_unpacked(m, NULL);
    return 0;
}

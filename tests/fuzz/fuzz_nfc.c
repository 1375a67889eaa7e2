/* Fuzzes NFC and NFKC (runtime/text/nfc.c). The input is the text: invalid UTF-8
 * must be refused (checked with the runtime's validator, which
 * fuzz_tokenizer checks apart); valid text must give valid UTF-8 no more
 * than 3 times as long, which NFC leaves as it is (NFC is idempotent), and
 * the quick check must never pass a text NFC changes; likewise for NFKC. Any disagreement
 * abort()s. */
#include "../../runtime/text/nfc.h"
#include "../../runtime/text/utf8_scan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    const char *s = (const char *)data;
    size_t bad;
    const int valid = ft_utf8_validate(s, size, &bad);
    char *out;
    size_t n;
    ft_status_t st = ft_nfc(s, size, &out, &n);
    if (!valid) {
        if (!st || out) abort();
        ft_status_free(st);
        return 0;
    }
    if (st) abort();
    if (n > 3 * size || out[n] != 0 || !ft_utf8_validate(out, n, &bad)) abort();
    if (ft_nfc_quick_check(s, size) && (n != size || memcmp(out, s, size) != 0)) abort();
    char *again;
    size_t n2;
    if (ft_nfc(out, n, &again, &n2)) abort();
    if (n2 != n || memcmp(again, out, n) != 0) abort();
    free(again);
    free(out);
    /* NFKC: the same, without the length bound (a code point may become 18) */
    if (ft_nfkc(s, size, &out, &n)) abort();
    if (out[n] != 0 || !ft_utf8_validate(out, n, &bad)) abort();
    if (ft_nfkc_quick_check(s, size) && (n != size || memcmp(out, s, size) != 0)) abort();
    if (ft_nfkc(out, n, &again, &n2)) abort();
    if (n2 != n || memcmp(again, out, n) != 0) abort();
    free(again);
    free(out);
    return 0;
}

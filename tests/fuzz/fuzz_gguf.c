/* Fuzz target: the GGUF parser and its conversion to a source model, on
 * bytes in memory. Seeds: tests/fuzz/corpus/fuzz_gguf/. */
#include "gguf_reader.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ft_gguf_t *g = NULL;
    ft_status_t st = ft_gguf_parse(data, size, "fuzz.gguf", &g);
    if (st) {
        ft_status_free(st);
        return 0;
    }
    ft_src_model_t *src = NULL;
    st = ft_src_model_create(FT_SRC_GGUF, "fuzz.gguf", &src);
    if (!st) st = ft_gguf_to_source(g, src);
    ft_status_free(st);
    ft_src_model_destroy(src);
    ft_gguf_free(g);
    return 0;
}

/* Fuzzes the safetensors header parser over arbitrary file bytes. */
#include "safetensors.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ft_st_file_t *f = NULL;
    ft_status_t st = ft_st_parse(data, size, "fuzz.safetensors", &f);
    if (!st) {
        /* Touch every tensor's range: it must lie within the input. */
        for (uint32_t i = 0; i < f->n_tensors; i++)
            if (f->tensors[i].offset > size || f->tensors[i].n_bytes > size - f->tensors[i].offset)
                __builtin_trap();
    }
    ft_status_free(st);
    ft_st_file_free(f);
    return 0;
}

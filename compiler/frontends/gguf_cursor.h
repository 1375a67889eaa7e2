/* Module-internal: a bounds-checked little-endian read cursor over a GGUF
 * file in memory, shared by gguf_reader.c, gguf_tensors.c and
 * gguf_tokenizer.c. Every read
 * fails with a message naming the file, the field and the byte offset. */
#ifndef FT_FRONTENDS_GGUF_CURSOR_H
#define FT_FRONTENDS_GGUF_CURSOR_H

#include "gguf_reader.h"

#include <stdint.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader copies little-endian arrays as they are: port it first"
/* Fills src->tok from tokenizer.ggml.* and tokenizer.chat_template
 * (gguf_tokenizer.c). */
FT_WARN_UNUSED ft_status_t ft_gguf_tokenizer_fill(const ft_gguf_t *g, ft_src_model_t *src);

#endif

typedef struct ft_gguf_cur {
    const uint8_t *data;
    uint64_t size; /* bytes */
    uint64_t pos;  /* next byte to read */
    const char *name;
    ft_arena_t *arena;
} ft_gguf_cur_t;

/* Reads n bytes (n <= 8) as a little-endian integer. `what` names the
 * field for the truncation error, e.g. "tensor 'x' n_dims". */
FT_WARN_UNUSED ft_status_t ft_gguf_cur_le(ft_gguf_cur_t *c, unsigned n, const char *what, uint64_t *out);

/* Reads a GGUF string (u64 length + bytes) into a NUL-terminated arena
 * copy, checking it is valid UTF-8; with no_nul, embedded NULs are refused
 * too (keys and tensor names are used as C strings). */
FT_WARN_UNUSED ft_status_t ft_gguf_cur_str(ft_gguf_cur_t *c, const char *what, int no_nul, ft_gguf_str_t *out);

/* 0 when s[0..len) is valid UTF-8 (no overlongs, surrogates or code
 * points above U+10FFFF), else 1 + the index of the first bad byte. */
uint64_t ft_gguf_utf8_check(const char *s, uint64_t len);

/* Parses the n_tensors tensor infos at c->pos into g->tensors and checks
 * each one's shape and type (gguf_tensors.c). */
FT_WARN_UNUSED ft_status_t ft_gguf_parse_tensor_infos(ft_gguf_cur_t *c, ft_gguf_t *g);
/* Sets g->data_start from c->pos and checks offsets: aligned, inside the
 * file and not overlapping (gguf_tensors.c). */
FT_WARN_UNUSED ft_status_t ft_gguf_check_layout(const ft_gguf_cur_t *c, ft_gguf_t *g);

/* Fills src->tok from tokenizer.ggml.* and tokenizer.chat_template
 * (gguf_tokenizer.c). */
FT_WARN_UNUSED ft_status_t ft_gguf_tokenizer_fill(const ft_gguf_t *g, ft_src_model_t *src);

#endif

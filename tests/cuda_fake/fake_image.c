/* Module images as cuModuleLoadData receives them: a cubin (ELF64, whose
 * length follows from its headers) or NUL-terminated PTX text. The fake
 * cannot run either; it reads the emitter's "ft_spec v1 ..." string (the
 * __device__ global ft_spec: raw bytes in the cubin's data, a decimal
 * byte list in PTX) and checks kernel names against the image. */
#include "fake_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Images past this are refused (headers that claim more are corrupt). */
#define FT_FAKE_IMAGE_MAX ((uint64_t)1 << 30)

static uint64_t ft_fake_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* end = max(end, off + n * each), 0 on overflow or past the limit. */
static int ft_fake_extend(uint64_t *end, uint64_t off, uint64_t n, uint64_t each)
{
    uint64_t bytes, last;
    if (__builtin_mul_overflow(n, each, &bytes) || __builtin_add_overflow(off, bytes, &last) ||
        last > FT_FAKE_IMAGE_MAX)
        return 0;
    if (last > *end) *end = last;
    return 1;
}

static size_t ft_fake_elf_size(const uint8_t *h)
{
    if (h[4] != 2 || h[5] != 1) return 0; /* ELFCLASS64, little-endian */
    const uint64_t phoff = ft_fake_le(h + 0x20, 8), shoff = ft_fake_le(h + 0x28, 8);
    const uint64_t phentsize = ft_fake_le(h + 0x36, 2), phnum = ft_fake_le(h + 0x38, 2);
    const uint64_t shentsize = ft_fake_le(h + 0x3a, 2), shnum = ft_fake_le(h + 0x3c, 2);
    uint64_t end = 64;
    if ((phnum && phentsize < 0x38) || (shnum && shentsize < 0x40) ||
        !ft_fake_extend(&end, phoff, phnum, phentsize) ||
        !ft_fake_extend(&end, shoff, shnum, shentsize))
        return 0;
    for (uint64_t i = 0; i < shnum; i++) {
        const uint8_t *sh = h + shoff + i * shentsize;
        if (ft_fake_le(sh + 4, 4) == 8) continue; /* SHT_NOBITS: no file bytes */
        if (!ft_fake_extend(&end, ft_fake_le(sh + 0x18, 8), 1, ft_fake_le(sh + 0x20, 8))) return 0;
    }
    for (uint64_t i = 0; i < phnum; i++) {
        const uint8_t *ph = h + phoff + i * phentsize;
        if (!ft_fake_extend(&end, ft_fake_le(ph + 8, 8), 1, ft_fake_le(ph + 0x20, 8))) return 0;
    }
    return (size_t)end;
}

size_t ft_fake_image_size(const void *image)
{
    const uint8_t *p = image;
    if (!p) return 0;
    if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') return ft_fake_elf_size(p);
    const size_t n = strnlen(image, FT_FAKE_IMAGE_MAX);
    if (n == FT_FAKE_IMAGE_MAX || !memmem(p, n, ".version", 8) || !memmem(p, n, ".target", 7))
        return 0;
    return n + 1;
}

static void ft_fake_spec_parse(const char *text, ft_fake_spec_t *spec)
{
    float eps;
    double theta;
    int norm, used = 0;
    if (sscanf(text, "ft_spec v1 norm_eps=%f rope_theta=%lf norm_topk_prob=%d%n", &eps, &theta,
               &norm, &used) == 3 &&
        used > 0 && eps >= 0.0f && theta > 0.0 && (norm == 0 || norm == 1)) {
        spec->present = 1;
        spec->norm_eps = eps;
        spec->rope_theta = theta;
        spec->norm_topk_prob = norm;
    }
}

/* PTX: ".global .align 1 .b8 ft_spec[N] = {102, 116, ...};" */
static void ft_fake_ptx_spec(const char *ptx, ft_fake_spec_t *spec)
{
    const char *p = strstr(ptx, " ft_spec[");
    p = p ? strchr(p, '{') : NULL;
    if (!p) return;
    char text[256];
    size_t n = 0;
    for (p++; n + 1 < sizeof(text);) {
        char *end;
        const long v = strtol(p, &end, 10);
        if (end == p || v <= 0 || v > 255) break;
        text[n++] = (char)v;
        p = end;
        while (*p == ',' || *p == ' ')
            p++;
    }
    text[n] = 0;
    ft_fake_spec_parse(text, spec);
}

void ft_fake_image_spec(const uint8_t *image, size_t n, ft_fake_spec_t *spec)
{
    memset(spec, 0, sizeof(*spec));
    if (n < 4) return;
    if (image[0] != 0x7f) {
        ft_fake_ptx_spec((const char *)image, spec);
        return;
    }
    static const char magic[] = "ft_spec v1 ";
    const uint8_t *s = memmem(image, n, magic, sizeof(magic) - 1);
    if (!s) return;
    char text[256];
    const size_t left = n - (size_t)(s - image);
    const size_t len = strnlen((const char *)s, left < sizeof(text) ? left : sizeof(text) - 1);
    memcpy(text, s, len);
    text[len] = 0;
    ft_fake_spec_parse(text, spec);
}

int ft_fake_image_has_kernel(const uint8_t *image, size_t n, const char *name)
{
    const size_t len = strlen(name);
    if (!len || len > 200 || n < 4) return 0;
    char needle[216];
    if (image[0] != 0x7f) {
        snprintf(needle, sizeof(needle), ".entry %s(", name);
        return strstr((const char *)image, needle) != NULL;
    }
    /* A cubin's string table holds "NAME\0" after a NUL (the symbol) or
     * after "." (section names such as .text.NAME). */
    memcpy(needle, name, len + 1);
    for (const uint8_t *p = image + 1; p < image + n;) {
        const uint8_t *hit = memmem(p, (size_t)(image + n - p), needle, len + 1);
        if (!hit) return 0;
        if (hit[-1] == 0 || hit[-1] == '.') return 1;
        p = hit + 1;
    }
    return 0;
}

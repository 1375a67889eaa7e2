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

/* ------------------------------------------------------------------ */
/* Parameter lists: what the real driver would lay the arguments out by */
/* ------------------------------------------------------------------ */

static const char *ft_fake_skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* Bytes of one PTX scalar type token (".u32"), 0 for any other token. */
static uint32_t ft_fake_ptx_type_bytes(const char *tok, size_t len)
{
    static const char *const types[] = {".b8",  ".u8",  ".s8",  ".b16", ".u16",
                                        ".s16", ".f16", ".b32", ".u32", ".s32",
                                        ".f32", ".b64", ".u64", ".s64", ".f64"};
    static const uint8_t bytes[] = {1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8, 8, 8};
    for (size_t i = 0; i < sizeof(bytes); i++)
        if (strlen(types[i]) == len && memcmp(tok, types[i], len) == 0) return bytes[i];
    return 0;
}

/* One ".param [.align N] .type [.ptr .space .align N] name[[N]]" at p;
 * its size in bytes, 0 when malformed. Advances *pp past the name. */
static uint32_t ft_fake_ptx_param(const char **pp)
{
    const char *p = ft_fake_skip_space(*pp);
    if (strncmp(p, ".param", 6) != 0) return 0;
    p += 6;
    uint32_t elem = 0;
    for (p = ft_fake_skip_space(p); *p == '.'; p = ft_fake_skip_space(p)) {
        size_t len = 1;
        while ((p[len] >= 'a' && p[len] <= 'z') || (p[len] >= '0' && p[len] <= '9'))
            len++;
        const uint32_t b = ft_fake_ptx_type_bytes(p, len);
        if (b && elem) return 0; /* two types */
        if (b) elem = b;
        const int align = len == 6 && memcmp(p, ".align", 6) == 0;
        p += len;
        if (align) { /* .align N: N is a power of two; it pads, not sizes */
            char *end;
            const unsigned long a = strtoul(ft_fake_skip_space(p), &end, 10);
            if (!a || a > 256 || (a & (a - 1))) return 0;
            p = end;
        }
    }
    const char *name = p;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
           *p == '_' || *p == '$')
        p++;
    if (!elem || p == name) return 0;
    uint64_t n = 1;
    if (*p == '[') {
        char *end;
        n = strtoull(p + 1, &end, 10);
        if (end == p + 1 || *end != ']' || !n || n > 4096) return 0;
        p = end + 1;
    }
    *pp = p;
    return (uint32_t)(n * elem);
}

/* PTX: the list after ".entry NAME(", up to its ")". */
static int ft_fake_ptx_params(const char *ptx, const char *name, uint32_t *sizes, uint32_t max,
                              uint32_t *out_n)
{
    char needle[216];
    snprintf(needle, sizeof(needle), ".entry %s(", name);
    const char *p = strstr(ptx, needle);
    if (!p) return 0;
    p = ft_fake_skip_space(p + strlen(needle));
    uint32_t n = 0;
    while (*p != ')') {
        if (n && *p++ != ',') return -1;
        const uint32_t b = n < max ? ft_fake_ptx_param(&p) : 0;
        if (!b) return -1;
        sizes[n++] = b;
        p = ft_fake_skip_space(p);
    }
    *out_n = n;
    return 1;
}

/* The bytes of the cubin section called `want`; 0 when absent, -1 when
 * the headers point outside the image. */
static int ft_fake_elf_section(const uint8_t *h, size_t n, const char *want, const uint8_t **out,
                               size_t *out_bytes)
{
    if (n < 64) return -1;
    const uint64_t shoff = ft_fake_le(h + 0x28, 8), shentsize = ft_fake_le(h + 0x3a, 2);
    const uint64_t shnum = ft_fake_le(h + 0x3c, 2), shstrndx = ft_fake_le(h + 0x3e, 2);
    uint64_t end = 0;
    if (shstrndx >= shnum || shentsize < 0x40 || !ft_fake_extend(&end, shoff, shnum, shentsize) ||
        end > n)
        return -1;
    const uint8_t *str = h + shoff + shstrndx * shentsize;
    const uint64_t str_off = ft_fake_le(str + 0x18, 8), str_bytes = ft_fake_le(str + 0x20, 8);
    end = 0;
    if (!ft_fake_extend(&end, str_off, 1, str_bytes) || end > n) return -1;
    const size_t want_len = strlen(want);
    for (uint64_t i = 0; i < shnum; i++) {
        const uint8_t *sh = h + shoff + i * shentsize;
        const uint64_t name = ft_fake_le(sh, 4);
        if (name >= str_bytes || str_bytes - name <= want_len ||
            memcmp(h + str_off + name, want, want_len + 1) != 0)
            continue;
        const uint64_t off = ft_fake_le(sh + 0x18, 8), bytes = ft_fake_le(sh + 0x20, 8);
        end = 0;
        if (!ft_fake_extend(&end, off, 1, bytes) || end > n) return -1;
        *out = h + off;
        *out_bytes = (size_t)bytes;
        return 1;
    }
    return 0;
}

/* Cubin: the EIATTR_KPARAM_INFO records of section .nv.info.NAME. Each
 * record is {u8 format, u8 attribute, value}: format 4 (EIFMT_SVAL) has a
 * u16 byte count and that many bytes, formats 1..3 two value bytes. A
 * KPARAM_INFO value is {u32 index, u16 ordinal, u16 offset, u32 flags},
 * the parameter's size in bytes in flags bits 18..31 (as cuobjdump
 * prints it). */
static int ft_fake_cubin_params(const uint8_t *image, size_t n_image, const char *name,
                                uint32_t *sizes, uint32_t max, uint32_t *out_n)
{
    enum { EIATTR_KPARAM_INFO = 0x17 };
    char want[216];
    snprintf(want, sizeof(want), ".nv.info.%s", name);
    const uint8_t *s;
    size_t n;
    const int found = ft_fake_elf_section(image, n_image, want, &s, &n);
    if (found <= 0) return found;
    uint32_t count = 0;
    uint64_t seen = 0; /* a bit per ordinal */
    for (size_t i = 0; i < n;) {
        if (n - i < 4) return -1;
        const uint8_t fmt = s[i], attr = s[i + 1];
        const size_t value = fmt == 4 ? (size_t)ft_fake_le(s + i + 2, 2) : 0;
        if (fmt < 1 || fmt > 4 || value > n - i - 4) return -1;
        if (attr == EIATTR_KPARAM_INFO) {
            if (fmt != 4 || value < 12) return -1;
            const uint32_t ordinal = (uint32_t)ft_fake_le(s + i + 8, 2);
            const uint32_t bytes = (uint32_t)(ft_fake_le(s + i + 12, 4) >> 18) & 0x3fff;
            if (ordinal >= max || ordinal >= 32 || (seen >> ordinal & 1) || !bytes) return -1;
            seen |= (uint64_t)1 << ordinal;
            sizes[ordinal] = bytes;
            if (ordinal + 1 > count) count = ordinal + 1;
        }
        i += 4 + value;
    }
    if (seen != ((uint64_t)1 << count) - 1) return -1; /* a gap in the ordinals */
    *out_n = count;
    return 1;
}

int ft_fake_image_params(const uint8_t *image, size_t n, const char *name, uint32_t *sizes,
                         uint32_t max, uint32_t *out_n)
{
    if (n < 4 || strlen(name) > 200) return -1;
    if (image[0] == 0x7f) return ft_fake_cubin_params(image, n, name, sizes, max, out_n);
    if (image[n - 1] != 0) return -1; /* PTX text keeps its NUL */
    return ft_fake_ptx_params((const char *)image, name, sizes, max, out_n);
}

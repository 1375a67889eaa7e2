/* FTW weights files: the streaming writer and the mapped reader (ftw.h). */
#include "ftw.h"

#include "../base/checked.h"
#include "../base/mapped_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Byte offsets of the header fields. */
enum {
    FT_FTW_OFF_MAGIC = 0,
    FT_FTW_OFF_VERSION = 8,
    FT_FTW_OFF_HEADER_BYTES = 12,
    FT_FTW_OFF_DATA_BYTES = 16,
    FT_FTW_OFF_HASH = 24,
    FT_FTW_OFF_PADDING = 40,
};

static const uint8_t ft_ftw_zeros[FT_FTW_ALIGN];

static uint32_t ft_ftw_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t ft_ftw_rd64(const uint8_t *p)
{
    return (uint64_t)ft_ftw_rd32(p) | (uint64_t)ft_ftw_rd32(p + 4) << 32;
}

static void ft_ftw_wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void ft_ftw_wr64(uint8_t *p, uint64_t v)
{
    ft_ftw_wr32(p, (uint32_t)v);
    ft_ftw_wr32(p + 4, (uint32_t)(v >> 32));
}

void ft_ftw_hash_hex(const uint8_t hash16[FT_FTW_HASH_BYTES], char out_hex[33])
{
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < FT_FTW_HASH_BYTES; i++) {
        out_hex[2 * i] = digits[hash16[i] >> 4];
        out_hex[2 * i + 1] = digits[hash16[i] & 15];
    }
    out_hex[32] = 0;
}

/* ---- Writer ---- */

struct ft_ftw_writer {
    char *path;
    char *tmp_path;
    FILE *file;
    uint64_t offset;      /* absolute offset of the next byte */
    XXH3_state_t *hash;   /* over the data bytes, padding included */
    int failed;           /* a write failed: only abort is allowed */
};

static void ft_ftw_writer_free(ft_ftw_writer_t *w)
{
    if (w->file)
        fclose(w->file);
    XXH3_freeState(w->hash);
    free(w->path);
    free(w->tmp_path);
    free(w);
}

ft_status_t ft_ftw_writer_create(const char *path, ft_ftw_writer_t **out_writer)
{
    *out_writer = NULL;
    ft_ftw_writer_t *w = calloc(1, sizeof(*w));
    size_t n = strlen(path);
    if (!w || !(w->path = strdup(path)) || !(w->tmp_path = malloc(n + sizeof(".tmp"))) ||
        !(w->hash = XXH3_createState())) {
        if (w)
            ft_ftw_writer_free(w);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    memcpy(w->tmp_path, path, n);
    memcpy(w->tmp_path + n, ".tmp", sizeof(".tmp"));
    XXH3_128bits_reset(w->hash);
    w->file = fopen(w->tmp_path, "wb");
    if (!w->file) {
        ft_status_t st =
            ft_status_make(FT_STATUS_IO, "%s: cannot create: %s", w->tmp_path, strerror(errno));
        ft_ftw_writer_free(w);
        return st;
    }
    /* The header is written last (ft_ftw_writer_finish); reserve its page. */
    if (fwrite(ft_ftw_zeros, 1, FT_FTW_HEADER_BYTES, w->file) != FT_FTW_HEADER_BYTES) {
        ft_status_t st =
            ft_status_make(FT_STATUS_IO, "%s: write failed: %s", w->tmp_path, strerror(errno));
        ft_ftw_writer_abort(w);
        return st;
    }
    w->offset = FT_FTW_HEADER_BYTES;
    *out_writer = w;
    return FT_OK;
}

ft_status_t ft_ftw_writer_write(ft_ftw_writer_t *w, const void *data, uint64_t n_bytes)
{
    uint64_t end;
    if (w->failed)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: write after a failed write",
                              w->tmp_path);
    if (!ft_add_u64(w->offset, n_bytes, &end) || n_bytes > SIZE_MAX)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %llu bytes at offset %llu overflow",
                              w->tmp_path, (unsigned long long)n_bytes,
                              (unsigned long long)w->offset);
    if (n_bytes && fwrite(data, 1, (size_t)n_bytes, w->file) != (size_t)n_bytes) {
        w->failed = 1;
        return ft_status_make(FT_STATUS_IO, "%s: write of %llu bytes at offset %llu failed: %s",
                              w->tmp_path, (unsigned long long)n_bytes,
                              (unsigned long long)w->offset, strerror(errno));
    }
    XXH3_128bits_update(w->hash, data, (size_t)n_bytes);
    w->offset = end;
    return FT_OK;
}

ft_status_t ft_ftw_writer_align(ft_ftw_writer_t *w, uint64_t *out_offset)
{
    uint64_t pad = (FT_FTW_ALIGN - w->offset % FT_FTW_ALIGN) % FT_FTW_ALIGN;
    ft_status_t st = ft_ftw_writer_write(w, ft_ftw_zeros, pad);
    if (!st && out_offset)
        *out_offset = w->offset;
    return st;
}

uint64_t ft_ftw_writer_offset(const ft_ftw_writer_t *w)
{
    return w->offset;
}

/* Pads, writes the header and closes the file; w->file is NULL after. */
FT_WARN_UNUSED static ft_status_t ft_ftw_writer_seal(ft_ftw_writer_t *w, uint8_t hash16[FT_FTW_HASH_BYTES])
{
    ft_status_t st = ft_ftw_writer_align(w, NULL);
    if (st)
        return st;
    uint8_t header[FT_FTW_OFF_PADDING];
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(w->hash));
    memcpy(hash16, canon.digest, FT_FTW_HASH_BYTES);
    memcpy(header + FT_FTW_OFF_MAGIC, FT_FTW_MAGIC, 8);
    ft_ftw_wr32(header + FT_FTW_OFF_VERSION, FT_FTW_VERSION);
    ft_ftw_wr32(header + FT_FTW_OFF_HEADER_BYTES, FT_FTW_HEADER_BYTES);
    ft_ftw_wr64(header + FT_FTW_OFF_DATA_BYTES, w->offset - FT_FTW_HEADER_BYTES);
    memcpy(header + FT_FTW_OFF_HASH, hash16, FT_FTW_HASH_BYTES);
    errno = 0;
    int ok = fflush(w->file) == 0 && fseeko(w->file, 0, SEEK_SET) == 0 &&
             fwrite(header, 1, sizeof(header), w->file) == sizeof(header);
    int err = errno;
    ok = fclose(w->file) == 0 && ok;
    w->file = NULL;
    if (!ok)
        return ft_status_make(FT_STATUS_IO, "%s: writing the header failed: %s", w->tmp_path,
                              strerror(err ? err : errno));
    return FT_OK;
}

ft_status_t ft_ftw_writer_finish(ft_ftw_writer_t *w, uint64_t *out_size,
                                 uint8_t out_hash16[FT_FTW_HASH_BYTES])
{
    uint8_t hash16[FT_FTW_HASH_BYTES];
    ft_status_t st = ft_ftw_writer_seal(w, hash16);
    if (!st && rename(w->tmp_path, w->path) != 0)
        st = ft_status_make(FT_STATUS_IO, "%s: cannot rename to %s: %s", w->tmp_path, w->path,
                            strerror(errno));
    if (st) {
        ft_ftw_writer_abort(w);
        return st;
    }
    if (out_size)
        *out_size = w->offset;
    if (out_hash16)
        memcpy(out_hash16, hash16, FT_FTW_HASH_BYTES);
    ft_ftw_writer_free(w);
    return FT_OK;
}

void ft_ftw_writer_abort(ft_ftw_writer_t *w)
{
    if (!w)
        return;
    if (w->file) {
        fclose(w->file);
        w->file = NULL;
    }
    unlink(w->tmp_path);
    ft_ftw_writer_free(w);
}

/* ---- Reader ---- */

struct ft_ftw {
    ft_mapped_file_t *file;
    uint64_t data_bytes;
    uint8_t hash[FT_FTW_HASH_BYTES];
};

/* Checks the header of a mapped file (see ftw.h for the layout). */
FT_WARN_UNUSED static ft_status_t ft_ftw_check_header(const uint8_t *p, uint64_t size, const char *path,
                                       uint64_t *out_data_bytes)
{
    if (size < 8 || memcmp(p + FT_FTW_OFF_MAGIC, FT_FTW_MAGIC, 8) != 0)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: not an FTW weights file: magic (byte 0) is not \"FTWEIGHT\"%s",
                              path, size < 8 ? " (the file is shorter than 8 bytes)" : "");
    if (size < FT_FTW_HEADER_BYTES)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: truncated header: the file is %llu bytes, the FTW header %u",
                              path, (unsigned long long)size, FT_FTW_HEADER_BYTES);
    uint32_t version = ft_ftw_rd32(p + FT_FTW_OFF_VERSION);
    if (version > FT_FTW_VERSION)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: version (byte %d): FTW format version %u is newer than this "
                              "freetoken (%u)",
                              path, FT_FTW_OFF_VERSION, version, FT_FTW_VERSION);
    if (version == 0)
        return ft_status_make(FT_STATUS_FORMAT, "%s: version (byte %d) is 0", path,
                              FT_FTW_OFF_VERSION);
    uint32_t header_bytes = ft_ftw_rd32(p + FT_FTW_OFF_HEADER_BYTES);
    if (header_bytes != FT_FTW_HEADER_BYTES)
        return ft_status_make(FT_STATUS_FORMAT, "%s: header_bytes (byte %d) is %u, expected %u",
                              path, FT_FTW_OFF_HEADER_BYTES, header_bytes, FT_FTW_HEADER_BYTES);
    for (uint32_t i = FT_FTW_OFF_PADDING; i < FT_FTW_HEADER_BYTES; i++)
        if (p[i] != 0)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: header padding (byte %u) is 0x%02x, expected 0", path, i,
                                  p[i]);
    uint64_t data_bytes = ft_ftw_rd64(p + FT_FTW_OFF_DATA_BYTES), want;
    if (!ft_add_u64(data_bytes, FT_FTW_HEADER_BYTES, &want) || want > size)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: truncated: data_bytes (byte %d) is %llu, so the file should "
                              "be %llu + %u bytes, but it is %llu bytes",
                              path, FT_FTW_OFF_DATA_BYTES, (unsigned long long)data_bytes,
                              (unsigned long long)data_bytes, FT_FTW_HEADER_BYTES,
                              (unsigned long long)size);
    if (want < size)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: data_bytes (byte %d) is %llu, so the file should be %llu "
                              "bytes, but it is %llu bytes (trailing data)",
                              path, FT_FTW_OFF_DATA_BYTES, (unsigned long long)data_bytes,
                              (unsigned long long)want, (unsigned long long)size);
    *out_data_bytes = data_bytes;
    return FT_OK;
}

ft_status_t ft_ftw_open(const char *path, ft_ftw_t **out_ftw)
{
    *out_ftw = NULL;
    ft_ftw_t *f = calloc(1, sizeof(*f));
    if (!f)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    ft_status_t st = ft_mapped_file_open(path, &f->file);
    if (!st)
        st = ft_ftw_check_header(f->file->data, f->file->size, path, &f->data_bytes);
    if (st) {
        ft_ftw_close(f);
        return st;
    }
    memcpy(f->hash, f->file->data + FT_FTW_OFF_HASH, FT_FTW_HASH_BYTES);
    *out_ftw = f;
    return FT_OK;
}

void ft_ftw_close(ft_ftw_t *f)
{
    if (!f)
        return;
    ft_mapped_file_close(f->file);
    free(f);
}

const char *ft_ftw_path(const ft_ftw_t *f) { return f->file->path; }
const uint8_t *ft_ftw_base(const ft_ftw_t *f) { return f->file->data; }
uint64_t ft_ftw_size(const ft_ftw_t *f) { return f->file->size; }
const uint8_t *ft_ftw_data(const ft_ftw_t *f) { return f->file->data + FT_FTW_HEADER_BYTES; }
uint64_t ft_ftw_data_bytes(const ft_ftw_t *f) { return f->data_bytes; }
const uint8_t *ft_ftw_hash(const ft_ftw_t *f) { return f->hash; }

ft_status_t ft_ftw_range(const ft_ftw_t *f, uint64_t offset, uint64_t n_bytes,
                         const uint8_t **out_ptr)
{
    *out_ptr = NULL;
    if (offset < FT_FTW_HEADER_BYTES || !ft_range_ok(offset, n_bytes, f->file->size))
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: bytes [%llu, %llu + %llu) are not inside the data area "
                              "[%u, %llu)",
                              f->file->path, (unsigned long long)offset,
                              (unsigned long long)offset, (unsigned long long)n_bytes,
                              FT_FTW_HEADER_BYTES, (unsigned long long)f->file->size);
    *out_ptr = f->file->data + offset;
    return FT_OK;
}

ft_status_t ft_ftw_check(const ft_ftw_t *f, uint64_t expected_size,
                         const uint8_t expected_hash16[FT_FTW_HASH_BYTES])
{
    if (f->file->size != expected_size)
        return ft_status_make(FT_STATUS_MISMATCH,
                              "%s: the file is %llu bytes but the plan expects %llu bytes",
                              f->file->path, (unsigned long long)f->file->size,
                              (unsigned long long)expected_size);
    if (memcmp(f->hash, expected_hash16, FT_FTW_HASH_BYTES) != 0) {
        char have[33], want[33];
        ft_ftw_hash_hex(f->hash, have);
        ft_ftw_hash_hex(expected_hash16, want);
        return ft_status_make(FT_STATUS_MISMATCH,
                              "%s: content_hash (byte %d) is %s but the plan expects %s: the "
                              "weights are not the ones this plan was compiled with",
                              f->file->path, FT_FTW_OFF_HASH, have, want);
    }
    return FT_OK;
}

ft_status_t ft_ftw_verify(const ft_ftw_t *f)
{
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits(ft_ftw_data(f), (size_t)f->data_bytes));
    if (memcmp(canon.digest, f->hash, FT_FTW_HASH_BYTES) != 0) {
        char have[33], want[33];
        ft_ftw_hash_hex(canon.digest, have);
        ft_ftw_hash_hex(f->hash, want);
        return ft_status_make(FT_STATUS_MISMATCH,
                              "%s: the data (bytes %u..%llu) hashes to %s but content_hash "
                              "(byte %d) is %s: the file is damaged",
                              f->file->path, FT_FTW_HEADER_BYTES,
                              (unsigned long long)f->file->size, have, FT_FTW_OFF_HASH, want);
    }
    return FT_OK;
}

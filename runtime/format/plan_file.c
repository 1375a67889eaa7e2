/* The plan container: header, zstd payload, protobuf (plan_file.h). */
#include "plan_file.h"

#include "../base/checked.h"
#include "../base/mapped_file.h"
#include "plan_validate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Byte offsets of the header fields. */
enum {
    FT_PLAN_OFF_MAGIC = 0,
    FT_PLAN_OFF_VERSION = 8,
    FT_PLAN_OFF_HEADER_BYTES = 12,
    FT_PLAN_OFF_RAW_BYTES = 16,
    FT_PLAN_OFF_PAYLOAD_BYTES = 24,
    FT_PLAN_OFF_PAYLOAD_HASH = 32,
    FT_PLAN_OFF_RESERVED = 40,
};

/* A zstd block costs at least its 3-byte header and yields at most 128 KiB,
 * so no frame of n bytes decompresses to more than this. It bounds what a
 * hostile header can make us allocate without rejecting any real plan. */
#define FT_PLAN_ZSTD_BLOCK_HEADER_BYTES 3u
#define FT_PLAN_ZSTD_BLOCK_MAX_OUT (UINT64_C(128) << 10)

static uint32_t ft_plan_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t ft_plan_rd64(const uint8_t *p)
{
    return (uint64_t)ft_plan_rd32(p) | (uint64_t)ft_plan_rd32(p + 4) << 32;
}

static void ft_plan_wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void ft_plan_wr64(uint8_t *p, uint64_t v)
{
    ft_plan_wr32(p, (uint32_t)v);
    ft_plan_wr32(p + 4, (uint32_t)(v >> 32));
}

/* The one place where zstd error codes become statuses. A failure while
 * decompressing means the file is damaged; while compressing, a bug or OOM. */
FT_WARN_UNUSED static ft_status_t ft_plan_zstd_status(size_t rc, int decompressing, const char *name,
                                       const char *what)
{
    ZSTD_ErrorCode ec = ZSTD_getErrorCode(rc);
    ft_status_code_t code = decompressing ? FT_STATUS_FORMAT : FT_STATUS_INTERNAL;
    if (ec == ZSTD_error_memory_allocation)
        code = FT_STATUS_OUT_OF_MEMORY;
    else if (decompressing && ec == ZSTD_error_frameParameter_windowTooLarge)
        code = FT_STATUS_OUT_OF_RANGE;
    return ft_status_make(code, "%s: %s: zstd: %s", name, what, ZSTD_getErrorName(rc));
}

/* Compresses raw into a new buffer holding header + payload. */
FT_WARN_UNUSED static ft_status_t ft_plan_frame(const uint8_t *raw, size_t raw_bytes, uint8_t **out_data,
                                 uint64_t *out_size)
{
    size_t cap = ZSTD_compressBound(raw_bytes);
    if (ZSTD_isError(cap))
        return ft_plan_zstd_status(cap, 0, "plan", "compress bound");
    uint8_t *buf = malloc(FT_PLAN_HEADER_BYTES + cap);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    ft_status_t st = FT_OK;
    if (!buf || !cctx) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "plan: out of memory compressing %zu bytes",
                            raw_bytes);
        goto out;
    }
    /* Every parameter that shapes the output is pinned, so the bytes do not
     * depend on library defaults or on the environment. */
    size_t rc = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, FT_PLAN_ZSTD_LEVEL);
    if (!ZSTD_isError(rc))
        rc = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);
    if (!ZSTD_isError(rc))
        rc = ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    if (!ZSTD_isError(rc))
        rc = ZSTD_compress2(cctx, buf + FT_PLAN_HEADER_BYTES, cap, raw, raw_bytes);
    if (ZSTD_isError(rc)) {
        st = ft_plan_zstd_status(rc, 0, "plan", "compress");
        goto out;
    }
    uint8_t *h = buf;
    memset(h, 0, FT_PLAN_HEADER_BYTES);
    memcpy(h + FT_PLAN_OFF_MAGIC, FT_PLAN_MAGIC, 8);
    ft_plan_wr32(h + FT_PLAN_OFF_VERSION, FT_PLAN_FORMAT_VERSION);
    ft_plan_wr32(h + FT_PLAN_OFF_HEADER_BYTES, FT_PLAN_HEADER_BYTES);
    ft_plan_wr64(h + FT_PLAN_OFF_RAW_BYTES, raw_bytes);
    ft_plan_wr64(h + FT_PLAN_OFF_PAYLOAD_BYTES, rc);
    ft_plan_wr64(h + FT_PLAN_OFF_PAYLOAD_HASH, XXH3_64bits(buf + FT_PLAN_HEADER_BYTES, rc));
    *out_data = buf;
    *out_size = FT_PLAN_HEADER_BYTES + (uint64_t)rc;
    buf = NULL;
out:
    ZSTD_freeCCtx(cctx);
    free(buf);
    return st;
}

ft_status_t ft_plan_encode(const Ftplan__Plan *plan, uint8_t **out_data, uint64_t *out_size)
{
    *out_data = NULL;
    *out_size = 0;
    if (!plan)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "plan: no plan to encode");
    size_t raw_bytes = ftplan__plan__get_packed_size(plan);
    if ((uint64_t)raw_bytes > FT_PLAN_MAX_RAW_BYTES)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "plan: serialized plan is %zu bytes, more than the %llu-byte limit",
                              raw_bytes, (unsigned long long)FT_PLAN_MAX_RAW_BYTES);
    uint8_t *raw = malloc(raw_bytes ? raw_bytes : 1);
    if (!raw)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "plan: out of memory packing %zu bytes",
                              raw_bytes);
    size_t packed = ftplan__plan__pack(plan, raw);
    ft_status_t st = FT_OK;
    if (packed != raw_bytes)
        st = ft_status_make(FT_STATUS_INTERNAL, "plan: packed %zu bytes, expected %zu", packed,
                            raw_bytes);
    else
        st = ft_plan_frame(raw, raw_bytes, out_data, out_size);
    free(raw);
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_plan_write_all(FILE *f, const uint8_t *data, uint64_t size,
                                     const char *tmp_path)
{
    if (size && fwrite(data, 1, (size_t)size, f) != (size_t)size)
        return ft_status_make(FT_STATUS_IO, "%s: write failed: %s", tmp_path, strerror(errno));
    if (fflush(f) != 0)
        return ft_status_make(FT_STATUS_IO, "%s: write failed: %s", tmp_path, strerror(errno));
    return FT_OK;
}

ft_status_t ft_plan_write(const Ftplan__Plan *plan, const char *path)
{
    uint8_t *data = NULL;
    uint64_t size = 0;
    ft_status_t st = ft_plan_encode(plan, &data, &size);
    if (st)
        return ft_status_annotate(st, "%s", path);
    size_t n = strlen(path);
    char *tmp_path = malloc(n + sizeof(".tmp"));
    if (!tmp_path) {
        free(data);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    memcpy(tmp_path, path, n);
    memcpy(tmp_path + n, ".tmp", sizeof(".tmp"));
    FILE *f = fopen(tmp_path, "wb");
    if (!f) {
        st = ft_status_make(FT_STATUS_IO, "%s: cannot create: %s", tmp_path, strerror(errno));
        goto out;
    }
    st = ft_plan_write_all(f, data, size, tmp_path);
    if (fclose(f) != 0 && !st)
        st = ft_status_make(FT_STATUS_IO, "%s: close failed: %s", tmp_path, strerror(errno));
    if (!st && rename(tmp_path, path) != 0)
        st = ft_status_make(FT_STATUS_IO, "%s: cannot rename to %s: %s", tmp_path, path,
                            strerror(errno));
    if (st)
        unlink(tmp_path);
out:
    free(tmp_path);
    free(data);
    return st;
}

/* Checks the fields that say what the file is: magic, version, header
 * size and the reserved field. */
FT_WARN_UNUSED static ft_status_t ft_plan_check_identity(const uint8_t *data, uint64_t size, const char *name)
{
    if (size < 8 || memcmp(data + FT_PLAN_OFF_MAGIC, FT_PLAN_MAGIC, 8) != 0)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: not a freetoken plan: magic (byte 0) is not \"FTPLAN\\r\\n\"%s",
                              name, size < 8 ? " (the file is shorter than 8 bytes)" : "");
    if (size < FT_PLAN_HEADER_BYTES)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: truncated header: the file is %llu bytes, the plan header %u",
                              name, (unsigned long long)size, FT_PLAN_HEADER_BYTES);
    uint32_t version = ft_plan_rd32(data + FT_PLAN_OFF_VERSION);
    if (version > FT_PLAN_FORMAT_VERSION)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: format_version (byte %d): plan format version %u is newer than "
                              "this freetoken (%u)",
                              name, FT_PLAN_OFF_VERSION, version, FT_PLAN_FORMAT_VERSION);
    if (version == 0)
        return ft_status_make(FT_STATUS_FORMAT, "%s: format_version (byte %d) is 0", name,
                              FT_PLAN_OFF_VERSION);
    uint32_t header_bytes = ft_plan_rd32(data + FT_PLAN_OFF_HEADER_BYTES);
    if (header_bytes != FT_PLAN_HEADER_BYTES)
        return ft_status_make(FT_STATUS_FORMAT, "%s: header_bytes (byte %d) is %u, expected %u",
                              name, FT_PLAN_OFF_HEADER_BYTES, header_bytes, FT_PLAN_HEADER_BYTES);
    uint64_t reserved = ft_plan_rd64(data + FT_PLAN_OFF_RESERVED);
    if (reserved != 0)
        return ft_status_make(FT_STATUS_FORMAT, "%s: reserved (byte %d) is 0x%llx, expected 0",
                              name, FT_PLAN_OFF_RESERVED, (unsigned long long)reserved);
    return FT_OK;
}

/* Checks the whole header; on success *out_raw_bytes is bounded and the
 * payload [48, size) has the recorded size and hash. */
FT_WARN_UNUSED static ft_status_t ft_plan_check_header(const uint8_t *data, uint64_t size, const char *name,
                                        uint64_t *out_raw_bytes)
{
    ft_status_t st = ft_plan_check_identity(data, size, name);
    if (st)
        return st;
    uint64_t raw_bytes = ft_plan_rd64(data + FT_PLAN_OFF_RAW_BYTES);
    if (raw_bytes > FT_PLAN_MAX_RAW_BYTES || raw_bytes > SIZE_MAX)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: raw_bytes (byte %d) is %llu, more than the %llu-byte limit",
                              name, FT_PLAN_OFF_RAW_BYTES, (unsigned long long)raw_bytes,
                              (unsigned long long)FT_PLAN_MAX_RAW_BYTES);
    uint64_t payload_bytes = ft_plan_rd64(data + FT_PLAN_OFF_PAYLOAD_BYTES);
    uint64_t avail = size - FT_PLAN_HEADER_BYTES;
    if (payload_bytes > avail)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: truncated: payload_bytes (byte %d) is %llu but only %llu bytes "
                              "follow the %u-byte header (the file is %llu bytes)",
                              name, FT_PLAN_OFF_PAYLOAD_BYTES, (unsigned long long)payload_bytes,
                              (unsigned long long)avail, FT_PLAN_HEADER_BYTES,
                              (unsigned long long)size);
    if (payload_bytes < avail)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: payload_bytes (byte %d) is %llu, leaving %llu unexpected bytes "
                              "at byte %llu",
                              name, FT_PLAN_OFF_PAYLOAD_BYTES, (unsigned long long)payload_bytes,
                              (unsigned long long)(avail - payload_bytes),
                              (unsigned long long)(FT_PLAN_HEADER_BYTES + payload_bytes));
    uint64_t want = ft_plan_rd64(data + FT_PLAN_OFF_PAYLOAD_HASH);
    uint64_t got = XXH3_64bits(data + FT_PLAN_HEADER_BYTES, (size_t)payload_bytes);
    if (got != want)
        return ft_status_make(FT_STATUS_MISMATCH,
                              "%s: payload_hash (byte %d) is 0x%016llx but the payload (bytes "
                              "%u..%llu) hashes to 0x%016llx",
                              name, FT_PLAN_OFF_PAYLOAD_HASH, (unsigned long long)want,
                              FT_PLAN_HEADER_BYTES, (unsigned long long)size,
                              (unsigned long long)got);
    uint64_t n_blocks = payload_bytes / FT_PLAN_ZSTD_BLOCK_HEADER_BYTES + 1, bound;
    if (ft_mul_u64(n_blocks, FT_PLAN_ZSTD_BLOCK_MAX_OUT, &bound) && raw_bytes > bound)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE,
                              "%s: raw_bytes (byte %d) is %llu but a %llu-byte zstd payload "
                              "decompresses to at most %llu bytes",
                              name, FT_PLAN_OFF_RAW_BYTES, (unsigned long long)raw_bytes,
                              (unsigned long long)payload_bytes, (unsigned long long)bound);
    *out_raw_bytes = raw_bytes;
    return FT_OK;
}

/* Decompresses the single zstd frame [data, data + n) into exactly
 * raw_bytes bytes; *out_raw is malloc'ed. */
FT_WARN_UNUSED static ft_status_t ft_plan_inflate(const uint8_t *data, uint64_t n, uint64_t raw_bytes,
                                   const char *name, uint8_t **out_raw)
{
    char where[48];
    snprintf(where, sizeof(where), "payload (byte %u)", FT_PLAN_HEADER_BYTES);
    size_t frame = ZSTD_findFrameCompressedSize(data, (size_t)n);
    if (ZSTD_isError(frame))
        return ft_plan_zstd_status(frame, 1, name, where);
    if (frame != n)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: %s: the first zstd frame is %zu bytes of %llu; a plan holds "
                              "exactly one frame",
                              name, where, frame, (unsigned long long)n);
    unsigned long long fcs = ZSTD_getFrameContentSize(data, (size_t)n);
    if (fcs == ZSTD_CONTENTSIZE_UNKNOWN || fcs == ZSTD_CONTENTSIZE_ERROR)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: %s: the zstd frame does not record its content size", name,
                              where);
    if (fcs != raw_bytes)
        return ft_status_make(FT_STATUS_MISMATCH,
                              "%s: raw_bytes (byte %d) is %llu but the zstd frame's content size "
                              "is %llu",
                              name, FT_PLAN_OFF_RAW_BYTES, (unsigned long long)raw_bytes, fcs);
    uint8_t *raw = malloc(raw_bytes ? (size_t)raw_bytes : 1);
    if (!raw)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory for %llu plan bytes",
                              name, (unsigned long long)raw_bytes);
    size_t rc = ZSTD_decompress(raw, (size_t)raw_bytes, data, (size_t)n);
    if (ZSTD_isError(rc) || rc != raw_bytes) {
        ft_status_t st = ZSTD_isError(rc)
                             ? ft_plan_zstd_status(rc, 1, name, where)
                             : ft_status_make(FT_STATUS_MISMATCH,
                                              "%s: %s: decompressed %zu bytes, raw_bytes says %llu",
                                              name, where, rc, (unsigned long long)raw_bytes);
        free(raw);
        return st;
    }
    *out_raw = raw;
    return FT_OK;
}

ft_status_t ft_plan_unpack(const uint8_t *raw, uint64_t size, const char *name,
                           Ftplan__Plan **out_plan)
{
    *out_plan = NULL;
    if (!name)
        name = "plan";
    if (size > SIZE_MAX || size > FT_PLAN_MAX_RAW_BYTES)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: plan message of %llu bytes is too large",
                              name, (unsigned long long)size);
    /* protobuf-c says only "failed": no field or offset is available. */
    Ftplan__Plan *plan = ftplan__plan__unpack(NULL, (size_t)size, raw);
    if (!plan)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: payload: the %llu-byte plan message is not a valid ftplan.Plan "
                              "protobuf",
                              name, (unsigned long long)size);
    ft_status_t st = ft_plan_validate(plan, name);
    if (st) {
        ft_plan_free(plan);
        return st;
    }
    *out_plan = plan;
    return FT_OK;
}

ft_status_t ft_plan_read_mem(const uint8_t *data, uint64_t size, const char *name,
                             Ftplan__Plan **out_plan)
{
    *out_plan = NULL;
    if (!name)
        name = "plan";
    if (!data && size)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: no data", name);
    uint64_t raw_bytes = 0;
    ft_status_t st = ft_plan_check_header(data, size, name, &raw_bytes);
    if (st)
        return st;
    uint8_t *raw = NULL;
    st = ft_plan_inflate(data + FT_PLAN_HEADER_BYTES, size - FT_PLAN_HEADER_BYTES, raw_bytes,
                         name, &raw);
    if (st)
        return st;
    st = ft_plan_unpack(raw, raw_bytes, name, out_plan);
    free(raw);
    return st;
}

ft_status_t ft_plan_read(const char *path, Ftplan__Plan **out_plan)
{
    *out_plan = NULL;
    ft_mapped_file_t *file = NULL;
    ft_status_t st = ft_mapped_file_open(path, &file);
    if (st)
        return st;
    st = ft_plan_read_mem(file->data, file->size, path, out_plan);
    ft_mapped_file_close(file);
    return st;
}

void ft_plan_free(Ftplan__Plan *plan)
{
    if (plan)
        ftplan__plan__free_unpacked(plan, NULL);
}

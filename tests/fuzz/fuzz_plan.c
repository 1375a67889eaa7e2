/* Fuzzes the plan reader. The input's first bytes pick what it is:
 *
 *   "FTPLAN\r\n"...  a whole plan file -> ft_plan_read_mem
 *   0x28...          a zstd frame (zstd frames start 28 b5 2f fd): it is
 *                    wrapped in a header with a true payload hash and
 *                    raw_bytes taken from the frame, so mutations reach the
 *                    decompressor and the protobuf instead of stopping at
 *                    the hash check
 *   anything else    a serialized ftplan.Plan -> ft_plan_unpack (unpack +
 *                    semantic check)
 *
 * Whatever is accepted must survive a re-encode and re-read. */
#include "../../runtime/format/plan_file.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static void ft_fuzz_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static ft_status_t ft_fuzz_payload(const uint8_t *data, size_t size, Ftplan__Plan **out_plan)
{
    unsigned long long raw = ZSTD_getFrameContentSize(data, size);
    if (raw == ZSTD_CONTENTSIZE_UNKNOWN || raw == ZSTD_CONTENTSIZE_ERROR)
        raw = 0;
    uint8_t *file = malloc(FT_PLAN_HEADER_BYTES + size);
    if (!file)
        abort();
    memset(file, 0, FT_PLAN_HEADER_BYTES);
    memcpy(file, FT_PLAN_MAGIC, 8);
    file[8] = FT_PLAN_FORMAT_VERSION;
    file[12] = FT_PLAN_HEADER_BYTES;
    ft_fuzz_put64(file + 16, raw);
    ft_fuzz_put64(file + 24, size);
    ft_fuzz_put64(file + 32, XXH3_64bits(data, size));
    memcpy(file + FT_PLAN_HEADER_BYTES, data, size);
    ft_status_t st = ft_plan_read_mem(file, FT_PLAN_HEADER_BYTES + size, "fuzz.ftp", out_plan);
    free(file);
    return st;
}

/* An accepted plan encodes, and its encoding reads back. */
static void ft_fuzz_reencode(const Ftplan__Plan *plan)
{
    uint8_t *data = NULL;
    uint64_t size = 0;
    ft_status_t st = ft_plan_encode(plan, &data, &size);
    if (st)
        abort();
    Ftplan__Plan *again = NULL;
    st = ft_plan_read_mem(data, size, "reencoded.ftp", &again);
    if (st || !again)
        abort();
    ft_plan_free(again);
    free(data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Ftplan__Plan *plan = NULL;
    ft_status_t st;
    if (size >= 8 && memcmp(data, FT_PLAN_MAGIC, 8) == 0)
        st = ft_plan_read_mem(data, size, "fuzz.ftp", &plan);
    else if (size >= 1 && data[0] == 0x28)
        st = ft_fuzz_payload(data, size, &plan);
    else
        st = ft_plan_unpack(data, size, "fuzz.pb", &plan);
    /* Exactly one of an error and a plan; an error always says something. */
    if (st ? plan != NULL || !*ft_status_message(st) : plan == NULL)
        abort();
    if (plan)
        ft_fuzz_reencode(plan);
    ft_status_free(st);
    ft_plan_free(plan);
    return 0;
}

/* FTW weights files: streaming writer, header checks, cheap and full
 * hash checks, and every corruption giving a clear error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/format/ftw.h"
#include "test_tmp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static char g_path[4096];

static const char *tmp_path(const char *name)
{
    snprintf(g_path, sizeof(g_path), "%s/%s", ft_test_tmpdir("ftw"), name);
    return g_path;
}

static void expect_error(ft_status_t st, ft_status_code_t code, const char *needle1,
                         const char *needle2)
{
    if (ft_status_code(st) != code || !strstr(ft_status_message(st), needle1) ||
        (needle2 && !strstr(ft_status_message(st), needle2)))
        fail_msg("expected %s with '%s' and '%s', got %s: %s", ft_status_code_name(code),
                 needle1, needle2 ? needle2 : "", ft_status_code_name(ft_status_code(st)),
                 ft_status_message(st));
    ft_status_free(st);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (uint8_t)(seed >> 24);
    }
}

/* Writes 100 bytes, aligns, writes 5000 bytes: a 16384-byte file. */
static void write_sample(const char *path, uint64_t *out_size, uint8_t hash[16])
{
    uint8_t a[100], b[5000];
    fill(a, sizeof(a), 1);
    fill(b, sizeof(b), 2);
    ft_ftw_writer_t *w = NULL;
    assert_null(ft_ftw_writer_create(path, &w));
    assert_int_equal(ft_ftw_writer_offset(w), 4096);
    uint64_t off = 0;
    assert_null(ft_ftw_writer_align(w, &off));
    assert_int_equal(off, 4096);
    assert_null(ft_ftw_writer_write(w, a, sizeof(a)));
    assert_int_equal(ft_ftw_writer_offset(w), 4196);
    assert_null(ft_ftw_writer_align(w, &off));
    assert_int_equal(off, 8192);
    assert_null(ft_ftw_writer_write(w, b, sizeof(b)));
    assert_int_equal(ft_ftw_writer_offset(w), 8192 + 5000);
    assert_null(ft_ftw_writer_finish(w, out_size, hash));
}

static void test_round_trip(void **state)
{
    const char *path = tmp_path("round.ftw");
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    uint64_t size = 0;
    uint8_t hash[16];
    write_sample(path, &size, hash);
    assert_int_equal(size, 16384);
    assert_int_equal(access(tmp, F_OK), -1); /* renamed away */

    size_t n = 0;
    uint8_t *bytes = ft_test_read_file(path, &n);
    assert_int_equal(n, 16384);
    assert_memory_equal(bytes, "FTWEIGHT", 8);
    assert_int_equal(bytes[8], 1);    /* version, little-endian */
    assert_int_equal(bytes[13], 0x10); /* header_bytes 4096 = 0x1000 */
    assert_int_equal(bytes[17], (12288 >> 8) & 0xff); /* data_bytes 12288 */
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits(bytes + 4096, n - 4096));
    assert_memory_equal(canon.digest, hash, 16);
    assert_memory_equal(bytes + 24, hash, 16);
    uint8_t a[100], b[5000];
    fill(a, sizeof(a), 1);
    fill(b, sizeof(b), 2);
    assert_memory_equal(bytes + 4096, a, sizeof(a));
    assert_memory_equal(bytes + 8192, b, sizeof(b));
    for (size_t i = 4196; i < 8192; i++)
        assert_int_equal(bytes[i], 0);
    for (size_t i = 8192 + 5000; i < n; i++)
        assert_int_equal(bytes[i], 0);

    ft_ftw_t *f = NULL;
    assert_null(ft_ftw_open(path, &f));
    assert_int_equal(ft_ftw_size(f), 16384);
    assert_int_equal(ft_ftw_data_bytes(f), 12288);
    assert_ptr_equal(ft_ftw_data(f), ft_ftw_base(f) + 4096);
    assert_memory_equal(ft_ftw_hash(f), hash, 16);
    assert_string_equal(ft_ftw_path(f), path);
    assert_memory_equal(ft_ftw_base(f) + 8192, b, sizeof(b));
    assert_null(ft_ftw_check(f, size, hash));
    assert_null(ft_ftw_verify(f));
    const uint8_t *p = NULL;
    assert_null(ft_ftw_range(f, 8192, 5000, &p));
    assert_ptr_equal(p, ft_ftw_base(f) + 8192);
    expect_error(ft_ftw_range(f, 16000, 1000, &p), FT_STATUS_OUT_OF_RANGE, path, "16000");
    expect_error(ft_ftw_range(f, 0, 16, &p), FT_STATUS_OUT_OF_RANGE, path, "data area");
    expect_error(ft_ftw_range(f, UINT64_MAX, 2, &p), FT_STATUS_OUT_OF_RANGE, path, NULL);
    ft_ftw_close(f);
    free(bytes);
}

static void test_empty_and_deterministic(void **state)
{
    ft_ftw_writer_t *w = NULL;
    const char *path = tmp_path("empty.ftw");
    assert_null(ft_ftw_writer_create(path, &w));
    uint64_t size = 0;
    uint8_t hash[16];
    assert_null(ft_ftw_writer_finish(w, &size, hash));
    assert_int_equal(size, 4096);
    ft_ftw_t *f = NULL;
    assert_null(ft_ftw_open(path, &f));
    assert_int_equal(ft_ftw_data_bytes(f), 0);
    assert_null(ft_ftw_verify(f));
    ft_ftw_close(f);

    uint8_t h1[16], h2[16];
    size_t n1, n2;
    write_sample(tmp_path("det1.ftw"), &size, h1);
    uint8_t *b1 = ft_test_read_file(g_path, &n1);
    write_sample(tmp_path("det2.ftw"), &size, h2);
    uint8_t *b2 = ft_test_read_file(g_path, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    assert_memory_equal(h1, h2, 16);
    free(b1);
    free(b2);
}

static void test_abort_and_io_errors(void **state)
{
    const char *path = tmp_path("aborted.ftw");
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    ft_ftw_writer_t *w = NULL;
    assert_null(ft_ftw_writer_create(path, &w));
    assert_null(ft_ftw_writer_write(w, "abc", 3));
    assert_int_equal(access(tmp, F_OK), 0);
    ft_ftw_writer_abort(w);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_int_equal(access(path, F_OK), -1);
    ft_ftw_writer_abort(NULL);

    expect_error(ft_ftw_writer_create("/nonexistent-dir/x.ftw", &w), FT_STATUS_IO,
                 "/nonexistent-dir/x.ftw.tmp", "cannot create");
    assert_null(w);
    ft_ftw_t *f = NULL;
    expect_error(ft_ftw_open("/nonexistent-dir/x.ftw", &f), FT_STATUS_IO, "/nonexistent-dir/x.ftw",
                 NULL);
    assert_null(f);
}

/* Opening the sample with its bytes edited by edit() fails as expected. */
static void expect_open_error(void (*edit)(uint8_t *, size_t *), ft_status_code_t code,
                              const char *needle)
{
    uint64_t size;
    uint8_t hash[16];
    write_sample(tmp_path("src.ftw"), &size, hash);
    size_t n = 0;
    uint8_t *bytes = ft_test_read_file(g_path, &n);
    edit(bytes, &n);
    const char *path = tmp_path("bad.ftw");
    assert_int_equal(ft_test_write_file(path, bytes, n), 0);
    ft_ftw_t *f = NULL;
    expect_error(ft_ftw_open(path, &f), code, path, needle);
    assert_null(f);
    free(bytes);
}

static void edit_magic(uint8_t *b, size_t *n) { b[3] ^= 0x20; }
static void edit_version(uint8_t *b, size_t *n) { b[8] = 2; }
static void edit_version0(uint8_t *b, size_t *n) { b[8] = 0; }
static void edit_header_bytes(uint8_t *b, size_t *n) { b[13] = 0x20; }
static void edit_padding(uint8_t *b, size_t *n) { b[1000] = 1; }
static void edit_trailing(uint8_t *b, size_t *n) { *n += 1; }
static void edit_data_bytes_huge(uint8_t *b, size_t *n) { memset(b + 16, 0xff, 8); }

static void test_header_corruption(void **state)
{
    expect_open_error(edit_magic, FT_STATUS_FORMAT, "magic");
    expect_open_error(edit_version, FT_STATUS_UNSUPPORTED,
                      "FTW format version 2 is newer than this freetoken (1)");
    expect_open_error(edit_version0, FT_STATUS_FORMAT, "version (byte 8)");
    expect_open_error(edit_header_bytes, FT_STATUS_FORMAT, "header_bytes (byte 12)");
    expect_open_error(edit_padding, FT_STATUS_FORMAT, "padding (byte 1000)");
    expect_open_error(edit_trailing, FT_STATUS_FORMAT, "trailing");
    expect_open_error(edit_data_bytes_huge, FT_STATUS_FORMAT, "data_bytes (byte 16)");
}

static void test_truncated(void **state)
{
    uint64_t size;
    uint8_t hash[16];
    write_sample(tmp_path("full.ftw"), &size, hash);
    size_t n = 0;
    uint8_t *bytes = ft_test_read_file(g_path, &n);
    const size_t cuts[] = {0, 5, 8, 40, 4095, 4096, 4097, 8192, 12000, 16383};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        const char *path = tmp_path("cut.ftw");
        assert_int_equal(ft_test_write_file(path, bytes, cuts[i]), 0);
        ft_ftw_t *f = NULL;
        ft_status_t st = ft_ftw_open(path, &f);
        assert_null(f);
        if (cuts[i] < 8) {
            expect_error(st, FT_STATUS_FORMAT, path, "magic");
        } else if (cuts[i] < 4096) {
            expect_error(st, FT_STATUS_FORMAT, path, "truncated header");
        } else {
            /* Both sizes appear: the file's and the one the header implies. */
            char have[64];
            snprintf(have, sizeof(have), "it is %zu bytes", cuts[i]);
            assert_non_null(strstr(ft_status_message(st), "12288 + 4096"));
            expect_error(st, FT_STATUS_FORMAT, "truncated", have);
        }
    }
    free(bytes);
}

static void test_modified_byte_and_wrong_hash(void **state)
{
    uint64_t size;
    uint8_t hash[16];
    const char *path = tmp_path("mod.ftw");
    write_sample(path, &size, hash);
    size_t n = 0;
    uint8_t *bytes = ft_test_read_file(path, &n);
    bytes[9000] ^= 1;
    assert_int_equal(ft_test_write_file(path, bytes, n), 0);
    ft_ftw_t *f = NULL;
    assert_null(ft_ftw_open(path, &f));
    assert_null(ft_ftw_check(f, size, hash)); /* the cheap check cannot see it */
    char hex[33];
    ft_ftw_hash_hex(hash, hex);
    expect_error(ft_ftw_verify(f), FT_STATUS_MISMATCH, path, hex);

    uint8_t wrong[16];
    memcpy(wrong, hash, 16);
    wrong[15] ^= 0x5a;
    char wrong_hex[33];
    ft_ftw_hash_hex(wrong, wrong_hex);
    ft_status_t st = ft_ftw_check(f, size, wrong);
    assert_non_null(strstr(ft_status_message(st), hex));
    expect_error(st, FT_STATUS_MISMATCH, path, wrong_hex);
    expect_error(ft_ftw_check(f, size + 4096, hash), FT_STATUS_MISMATCH, path, "20480");
    ft_ftw_close(f);
    free(bytes);

    uint8_t h[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                     0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10};
    ft_ftw_hash_hex(h, hex);
    assert_string_equal(hex, "0123456789abcdeffedcba9876543210");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_empty_and_deterministic),
        cmocka_unit_test(test_abort_and_io_errors),
        cmocka_unit_test(test_header_corruption),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_modified_byte_and_wrong_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

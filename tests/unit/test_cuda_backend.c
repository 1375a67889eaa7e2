/* The CUDA backend without a GPU: a missing driver gives a clear
 * FT_STATUS_UNAVAILABLE (the path every CI machine takes), the CUDA
 * toolkit's stub libcuda resolves every entry point of the symbol table
 * and then reports unavailable, and the image choice (cubin of the
 * device's major architecture, else PTX) is right. Where a GPU is present
 * the device round-trips bytes through device memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "backends/cuda/cuda_device.h"
#include "test_tmp.h"

static void expect_unavailable(ft_status_t st, const char *needle)
{
    assert_non_null(st);
    assert_int_equal(ft_status_code(st), FT_STATUS_UNAVAILABLE);
    if (!strstr(ft_status_message(st), needle))
        fail_msg("'%s' not in: %s", needle, ft_status_message(st));
    ft_status_free(st);
}

static void test_missing_driver(void **state)
{
    ft_cuda_device_options_t o;
    ft_cuda_device_options_init(&o);
    o.lib_name = "libft_no_such_cuda_driver.so.1";
    ft_cuda_device_t *d = (ft_cuda_device_t *)1;
    expect_unavailable(ft_cuda_device_create(&o, &d),
                       "no CUDA driver: dlopen(\"libft_no_such_cuda_driver.so.1\")");
    assert_null(d);
}

static void test_stub_driver(void **state)
{
    static const char *const stubs[] = {
        "/usr/local/cuda/lib64/stubs/libcuda.so",
        "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so"};
    const char *stub = NULL;
    for (size_t i = 0; i < sizeof(stubs) / sizeof(stubs[0]) && !stub; i++)
        stub = access(stubs[i], R_OK) == 0 ? stubs[i] : NULL;
    if (!stub) skip();
    /* Every symbol resolves (else "lacks <symbol>"); cuInit then fails
     * with CUDA_ERROR_STUB_LIBRARY (34). */
    ft_cuda_device_options_t o;
    ft_cuda_device_options_init(&o);
    o.lib_name = stub;
    ft_cuda_device_t *d = NULL;
    expect_unavailable(ft_cuda_device_create(&o, &d), "cuInit: CUDA error 34");
    assert_null(d);
}

/* A mapped file pinned in place (read-only registration) is read by the
 * device through its mapped address: copy it to device memory and back. */
static void pin_mapped_file(ft_cuda_device_t *d)
{
    char path[4300];
    snprintf(path, sizeof(path), "%s/weights.bin", ft_test_tmpdir("cuda_pin"));
    const size_t n = (1 << 20) + 100; /* not a whole number of pages */
    uint8_t *bytes = malloc(n), *back = malloc(n);
    assert_true(bytes && back);
    for (size_t i = 0; i < n; i++)
        bytes[i] = (uint8_t)(i * 13 + 5);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(bytes, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
    ft_mapped_file_t *f = NULL;
    assert_null(ft_mapped_file_open(path, &f));
    ft_cu_deviceptr mapped = 0, buf = 0;
    ft_cu_stream s = NULL;
    ft_status_t st = ft_cuda_pin_mapped_file(d, f, &mapped);
    if (st) {
        /* Devices without read-only registration say so. */
        fprintf(stderr, "test_cuda_backend: %s\n", ft_status_message(st));
        assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
        ft_status_free(st);
    } else {
        assert_null(ft_cuda_alloc(d, n, &buf));
        assert_null(ft_cuda_stream_create(d, &s));
        assert_null(ft_cuda_copy_d2d(d, buf, mapped, n, s));
        assert_null(ft_cuda_copy_d2h(d, back, buf, n, s));
        assert_null(ft_cuda_stream_sync(d, s));
        assert_memory_equal(back, bytes, n);
        ft_cuda_stream_destroy(d, s);
        ft_cuda_free(d, buf);
        ft_cuda_unpin_mapped_file(d, f);
    }
    ft_mapped_file_close(f);
    free(bytes);
    free(back);
}

/* With a GPU: alloc, pin an mmap'ed range in place, copy through the
 * device and back. Without one: the default driver name is unavailable. */
static void test_default_driver(void **state)
{
    ft_cuda_device_t *d = NULL;
    ft_status_t st = ft_cuda_device_create(NULL, &d);
    if (st) {
        fprintf(stderr, "test_cuda_backend: %s\n", ft_status_message(st));
        assert_int_equal(ft_status_code(st), FT_STATUS_UNAVAILABLE);
        ft_status_free(st);
        return;
    }
    const ft_cuda_device_info_t *in = ft_cuda_device_info(d);
    assert_true(in->cc_major >= 5 && in->total_bytes > 0);
    size_t free_b = 0, total_b = 0;
    assert_null(ft_cuda_mem_info(d, &free_b, &total_b));
    assert_true(free_b > 0 && free_b <= total_b);
    const size_t n = 1 << 20;
    uint8_t *host = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(host != MAP_FAILED);
    for (size_t i = 0; i < n; i++)
        host[i] = (uint8_t)(i * 7);
    ft_cu_deviceptr dev_buf = 0, mapped = 0;
    ft_cu_stream s = NULL;
    assert_null(ft_cuda_host_register(d, host, n, 0, &mapped));
    assert_true(mapped != 0);
    assert_null(ft_cuda_alloc(d, n, &dev_buf));
    assert_null(ft_cuda_stream_create(d, &s));
    assert_null(ft_cuda_copy_h2d(d, dev_buf, host, n, s));
    assert_null(ft_cuda_stream_sync(d, s));
    memset(host, 0, n);
    assert_null(ft_cuda_copy_d2h(d, host, dev_buf, n, s));
    assert_null(ft_cuda_stream_sync(d, s));
    for (size_t i = 0; i < n; i++)
        if (host[i] != (uint8_t)(i * 7)) fail_msg("byte %zu came back as %u", i, host[i]);
    ft_cuda_stream_destroy(d, s);
    ft_cuda_free(d, dev_buf);
    ft_cuda_host_unregister(d, host);
    munmap(host, n);
    pin_mapped_file(d);
    ft_cuda_device_destroy(d);
}

static void test_image_pick(void **state)
{
    static const char blob[] = "x";
    const ft_cuda_image_t im[] = {
        {80, 0, blob, 1}, {86, 0, blob, 1}, {90, 0, blob, 1}, {120, 0, blob, 1}, {80, 1, blob, 2},
    };
    assert_int_equal(ft_cuda_image_pick(im, 5, 8, 0), 0);
    assert_int_equal(ft_cuda_image_pick(im, 5, 8, 6), 1);
    assert_int_equal(ft_cuda_image_pick(im, 5, 8, 9), 1); /* sm_86 cubin runs on 8.9 */
    assert_int_equal(ft_cuda_image_pick(im, 5, 9, 0), 2);
    assert_int_equal(ft_cuda_image_pick(im, 5, 10, 0), 4); /* no sm_10x cubin: PTX */
    assert_int_equal(ft_cuda_image_pick(im, 5, 12, 1), 3);
    assert_int_equal(ft_cuda_image_pick(im, 5, 7, 5), -1);  /* older than every target */
    assert_int_equal(ft_cuda_image_pick(im, 4, 10, 0), -1); /* no PTX offered */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_driver),
        cmocka_unit_test(test_stub_driver),
        cmocka_unit_test(test_default_driver),
        cmocka_unit_test(test_image_pick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Skipping a CUDA test (tests/unit/test_cuda_*.c): right only where CMake
 * found no NVRTC. Where it did (FT_TEST_NVRTC 1, set by tests/CMakeLists.txt,
 * as in CI), the kernels can be compiled and the fake driver is built, so
 * a test that cannot run is broken and fails, naming why, instead of
 * passing as a skip. Include after <cmocka.h>. */
#ifndef FT_TEST_CUDA_TEST_SKIP_H
#define FT_TEST_CUDA_TEST_SKIP_H

#ifndef FT_TEST_NVRTC
#error "FT_TEST_NVRTC (1 when CMake found NVRTC) comes from tests/CMakeLists.txt"
#endif

#define FT_CUDA_TEST_SKIP(why)                                                                     \
    do {                                                                                           \
        if (FT_TEST_NVRTC) fail_msg("cannot run although this build has NVRTC: %s", (why));        \
        skip();                                                                                    \
    } while (0)

#endif

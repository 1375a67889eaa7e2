/* The fake driver's modules and launches: cuModuleLoadData keeps a copy
 * of a cubin or PTX image and its ft_spec constants; cuModuleGetFunction
 * resolves a kernel the image defines and the fake can emulate (its name
 * parses, fake_kernels.c), else CUDA_ERROR_NOT_FOUND, and reads the
 * entry's parameter list from the image; cuLaunchKernel checks that list
 * against the emulation's argument layout (CUDA_ERROR_INVALID_VALUE and a
 * line on stderr when they differ), copies the arguments (as the driver
 * does) and runs or records the emulation on the stream. */
#include "fake_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ft_fake_module {
    uint8_t *image;
    size_t n_bytes;
    ft_fake_spec_t spec;
    ft_fake_function_t *functions;
} ft_fake_module_t;

FT_FAKE_API int cuModuleLoadData(ft_fake_module_t **out, const void *image)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (!out || !image) return FT_FAKE_ERROR_INVALID_VALUE;
    const size_t n = ft_fake_image_size(image);
    if (!n) return FT_FAKE_ERROR_INVALID_IMAGE;
    ft_fake_module_t *m = calloc(1, sizeof(*m));
    if (!m || !(m->image = malloc(n))) {
        free(m);
        return FT_FAKE_ERROR_OUT_OF_MEMORY;
    }
    memcpy(m->image, image, n);
    m->n_bytes = n;
    ft_fake_image_spec(m->image, n, &m->spec);
    *out = m;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuModuleUnload(ft_fake_module_t *m)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (!m) return FT_FAKE_ERROR_INVALID_HANDLE;
    ft_fake_flush_stream(NULL); /* queued launches may use its kernels */
    while (m->functions) {
        ft_fake_function_t *f = m->functions;
        m->functions = f->next;
        free(f);
    }
    free(m->image);
    free(m);
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuModuleGetFunction(ft_fake_function_t **out, ft_fake_module_t *m, const char *name)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (!out || !m || !name) return FT_FAKE_ERROR_INVALID_VALUE;
    *out = NULL;
    ft_fake_kernel_t k;
    if (strlen(name) >= sizeof(m->functions->name) || !ft_fake_kernel_parse(name, &k) ||
        !ft_fake_image_has_kernel(m->image, m->n_bytes, name))
        return FT_FAKE_ERROR_NOT_FOUND;
    k.spec = m->spec;
    uint32_t bytes[FT_FAKE_MAX_PARAMS], n_params = 0;
    if (ft_fake_image_params(m->image, m->n_bytes, name, bytes, FT_FAKE_MAX_PARAMS, &n_params) <
        0) {
        fprintf(stderr, "fake cuda: %s: the image's parameter list is malformed\n", name);
        return FT_FAKE_ERROR_INVALID_IMAGE;
    }
    /* One handle per name and module; threads may look kernels up at once. */
    pthread_mutex_lock(&ft_fake_dev.lock);
    ft_fake_function_t *f = m->functions;
    while (f && strcmp(f->name, name) != 0)
        f = f->next;
    if (!f && (f = calloc(1, sizeof(*f)))) {
        f->kernel = k;
        f->n_params = n_params;
        memcpy(f->param_bytes, bytes, n_params * sizeof(bytes[0]));
        memcpy(f->name, name, strlen(name) + 1);
        f->next = m->functions;
        m->functions = f;
    }
    pthread_mutex_unlock(&ft_fake_dev.lock);
    if (!f) return FT_FAKE_ERROR_OUT_OF_MEMORY;
    *out = f;
    return FT_FAKE_SUCCESS;
}

/* The real driver lays out arguments by the entry's parameter list, so
 * an emulation that decodes another layout would pass here and fail on a
 * GPU: both must agree, parameter by parameter. */
static int ft_fake_check_layout(const ft_fake_function_t *f)
{
    const ft_fake_kind_t *kind = f->kernel.kind;
    if (f->n_params != kind->n_args) {
        fprintf(stderr,
                "fake cuda: launch of %s: the image's entry has %u parameters, the emulated kernel "
                "takes %u\n",
                f->name, f->n_params, kind->n_args);
        return FT_FAKE_ERROR_INVALID_VALUE;
    }
    for (uint32_t i = 0; i < f->n_params; i++)
        if (f->param_bytes[i] != kind->arg_bytes[i]) {
            fprintf(stderr,
                    "fake cuda: launch of %s: parameter %u is %u bytes in the image's entry, the "
                    "emulated kernel takes %u\n",
                    f->name, i, f->param_bytes[i], kind->arg_bytes[i]);
            return FT_FAKE_ERROR_INVALID_VALUE;
        }
    return FT_FAKE_SUCCESS;
}

/* extra = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE,
 * &size, CU_LAUNCH_PARAM_END}: the arguments packed at their natural
 * alignment, as the real driver checks them; the size must be the
 * entry's. Points params[i] into buf. */
static int ft_fake_extra_params(const ft_fake_function_t *f, void **extra, void **params)
{
    enum { END = 0, BUFFER_POINTER = 1, BUFFER_SIZE = 2 };
    uint8_t *buf = NULL;
    const size_t *size = NULL;
    for (uint32_t i = 0; extra[i] != (void *)(uintptr_t)END; i += 2) {
        if (i >= 8) return FT_FAKE_ERROR_INVALID_VALUE;
        if (extra[i] == (void *)(uintptr_t)BUFFER_POINTER)
            buf = extra[i + 1];
        else if (extra[i] == (void *)(uintptr_t)BUFFER_SIZE)
            size = extra[i + 1];
        else
            return FT_FAKE_ERROR_INVALID_VALUE;
    }
    if (!buf || !size) return FT_FAKE_ERROR_INVALID_VALUE;
    size_t off = 0;
    for (uint32_t i = 0; i < f->n_params; i++) {
        const size_t b = f->param_bytes[i], align = b >= 8 ? 8 : b >= 4 ? 4 : b >= 2 ? 2 : 1;
        off = (off + align - 1) / align * align;
        params[i] = buf + off;
        off += b;
    }
    if (*size != off) {
        fprintf(stderr,
                "fake cuda: launch of %s: the argument buffer is %zu bytes, the image's entry "
                "takes %zu\n",
                f->name, *size, off);
        return FT_FAKE_ERROR_INVALID_VALUE;
    }
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuLaunchKernel(ft_fake_function_t *f, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                               ft_fake_stream_t *s, void **params, void **extra)
{
    int rc = ft_fake_ready();
    if (rc) return rc;
    if (!f || (params && extra)) return FT_FAKE_ERROR_INVALID_VALUE;
    if ((rc = ft_fake_check_layout(f))) return rc;
    void *packed[FT_FAKE_MAX_PARAMS];
    if (extra && (rc = ft_fake_extra_params(f, extra, packed))) return rc;
    if (extra) params = packed;
    const ft_fake_kind_t *kind = f->kernel.kind;
    ft_fake_op_t op = {
        .kind = FT_FAKE_OP_LAUNCH, .fn = f, .grid = {gx, gy, gz}, .block = {bx, by, bz}};
    if (kind->n_args && !params) return FT_FAKE_ERROR_INVALID_VALUE;
    for (uint32_t i = 0; i < kind->n_args; i++) {
        if (!params[i]) return FT_FAKE_ERROR_INVALID_VALUE;
        memcpy(&op.args[i], params[i], kind->arg_bytes[i]);
    }
    return ft_fake_submit(s, &op);
}

/* The fake driver's modules and launches: cuModuleLoadData keeps a copy
 * of a cubin or PTX image and its ft_spec constants; cuModuleGetFunction
 * resolves a kernel the image defines and the fake can emulate (its name
 * parses, fake_kernels.c), else CUDA_ERROR_NOT_FOUND; cuLaunchKernel
 * copies the arguments (as the driver does) and runs or records the
 * emulation on the stream. */
#include "fake_driver.h"

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
    /* One handle per name and module; threads may look kernels up at once. */
    pthread_mutex_lock(&ft_fake_dev.lock);
    ft_fake_function_t *f = m->functions;
    while (f && strcmp(f->name, name) != 0)
        f = f->next;
    if (!f && (f = calloc(1, sizeof(*f)))) {
        f->kernel = k;
        memcpy(f->name, name, strlen(name) + 1);
        f->next = m->functions;
        m->functions = f;
    }
    pthread_mutex_unlock(&ft_fake_dev.lock);
    if (!f) return FT_FAKE_ERROR_OUT_OF_MEMORY;
    *out = f;
    return FT_FAKE_SUCCESS;
}

FT_FAKE_API int cuLaunchKernel(ft_fake_function_t *f, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                               ft_fake_stream_t *s, void **params, void **extra)
{
    const int rc = ft_fake_ready();
    if (rc) return rc;
    if (!f || extra) return FT_FAKE_ERROR_INVALID_VALUE;
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

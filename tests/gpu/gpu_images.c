/* Prebuilt kernel images for machines without NVRTC: written here by
 * `gpu_kernels --write-images DIR` (scripts/gpu-prepare.sh), read on the
 * GPU machine by `gpu_kernels_prebuilt --images DIR`. DIR/images.txt
 * lists one image a line: "<sm> <is_ptx> <file>". */
#include "gpu_harness.h"

#include <string.h>

static void *gk_read_all(const char *path, size_t *out_n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        exit(1);
    }
    size_t cap = 1 << 20, n = 0;
    char *data = gk_xmalloc(cap + 1);
    for (size_t got; (got = fread(data + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *bigger = realloc(data, 2 * cap + 1);
            if (!bigger) {
                fprintf(stderr, "%s: out of memory\n", path);
                exit(1);
            }
            data = bigger, cap *= 2;
        }
    }
    fclose(f);
    data[n] = 0; /* PTX is text: keep a NUL after it */
    *out_n = n;
    return data;
}

void gk_images_read(const char *dir, gk_images_t *out)
{
    char path[4096], file[256];
    memset(out, 0, sizeof(*out));
    snprintf(path, sizeof(path), "%s/images.txt", dir);
    FILE *list = fopen(path, "r");
    if (!list) {
        fprintf(stderr, "%s: cannot open (write it with gpu_kernels --write-images)\n", path);
        exit(1);
    }
    unsigned sm;
    int is_ptx;
    while (out->n < GK_MAX_IMAGES && fscanf(list, "%u %d %255s", &sm, &is_ptx, file) == 3) {
        if (strchr(file, '/')) {
            fprintf(stderr, "%s: '%s' is not a file name in %s\n", path, file, dir);
            exit(1);
        }
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        size_t n;
        void *data = gk_read_all(path, &n);
        out->im[out->n++] = (ft_cuda_image_t){sm, is_ptx != 0, data, is_ptx ? n + 1 : n};
    }
    fclose(list);
    if (!out->n) {
        fprintf(stderr, "%s/images.txt lists no images\n", dir);
        exit(1);
    }
}

void gk_images_write(const char *dir, const gk_images_t *images)
{
    char path[4096], file[64];
    snprintf(path, sizeof(path), "%s/images.txt", dir);
    FILE *list = fopen(path, "w");
    if (!list) {
        fprintf(stderr, "%s: cannot create\n", path);
        exit(1);
    }
    for (uint32_t i = 0; i < images->n; i++) {
        const ft_cuda_image_t *im = &images->im[i];
        snprintf(file, sizeof(file), "gk_%s%u.%s", im->is_ptx ? "compute" : "sm", im->sm,
                 im->is_ptx ? "ptx" : "cubin");
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        FILE *f = fopen(path, "wb");
        /* PTX is stored without its NUL (gk_images_read adds it back). */
        const size_t n = im->is_ptx ? strnlen(im->data, im->n_bytes) : im->n_bytes;
        if (!f || fwrite(im->data, 1, n, f) != n || fclose(f) != 0) {
            fprintf(stderr, "%s: cannot write\n", path);
            exit(1);
        }
        fprintf(list, "%u %d %s\n", im->sm, im->is_ptx, file);
    }
    if (fclose(list) != 0) {
        fprintf(stderr, "%s/images.txt: cannot write\n", dir);
        exit(1);
    }
}

void gk_images_free(gk_images_t *images)
{
    for (uint32_t i = 0; i < images->n; i++)
        free((void *)images->im[i].data);
    memset(images, 0, sizeof(*images));
}

#include "mapped_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

ft_status_t ft_mapped_file_open(const char *path, ft_mapped_file_t **out_file)
{
    *out_file = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ft_status_make(FT_STATUS_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        ft_status_t st = ft_status_make(FT_STATUS_IO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return st;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return ft_status_make(FT_STATUS_IO, "%s: not a regular file", path);
    }
    ft_mapped_file_t *f = calloc(1, sizeof(*f));
    if (!f || !(f->path = strdup(path))) {
        free(f);
        close(fd);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    f->size = (uint64_t)sb.st_size;
    if (f->size > 0) {
        void *p = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            ft_status_t st =
                ft_status_make(FT_STATUS_IO, "%s: cannot map %llu bytes: %s", path,
                               (unsigned long long)f->size, strerror(errno));
            close(fd);
            free(f->path);
            free(f);
            return st;
        }
        f->data = p;
    }
    close(fd); /* the mapping keeps the file alive */
    *out_file = f;
    return FT_OK;
}

void ft_mapped_file_close(ft_mapped_file_t *file)
{
    if (!file)
        return;
    if (file->data)
        munmap((void *)file->data, (size_t)file->size);
    free(file->path);
    free(file);
}

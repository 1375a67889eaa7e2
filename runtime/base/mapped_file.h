/* Read-only memory mapping of a whole file. Model files and FTW weights are
 * mapped, never read into heap memory. */
#ifndef FT_BASE_MAPPED_FILE_H
#define FT_BASE_MAPPED_FILE_H

#include "freetoken.h"

#include <stdint.h>

typedef struct ft_mapped_file {
    char *path;         /* owned copy of the path, for error messages */
    const uint8_t *data; /* NULL for an empty file */
    uint64_t size;       /* bytes */
} ft_mapped_file_t;

/* Maps `path` read-only. On success *out_file is owned by the caller and is
 * released with ft_mapped_file_close. */
FT_WARN_UNUSED ft_status_t ft_mapped_file_open(const char *path, ft_mapped_file_t **out_file);
void ft_mapped_file_close(ft_mapped_file_t *file);

#endif

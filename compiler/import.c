/* Import: a path (GGUF file or HF directory) -> source model -> IR. */
#include "import.h"

#include "gguf.h"
#include "hf.h"
#include "model_registry.h"

#include <string.h>
#include <sys/stat.h>

ft_status_t ft_import_source(const char *path, ft_src_model_t **out_src)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return ft_status_make(FT_STATUS_IO, "%s: no such file or directory", path);
    if (S_ISDIR(sb.st_mode))
        return ft_hf_import(path, out_src);
    return ft_gguf_import(path, out_src);
}

ft_status_t ft_import_model(const char *path, ft_ir_model_t **out_model)
{
    *out_model = NULL;
    ft_src_model_t *src = NULL;
    ft_status_t st = ft_import_source(path, &src);
    if (st)
        return st;
    st = ft_model_build_ir(src, out_model);
    ft_src_model_destroy(src);
    return st;
}

/* Reading a checkpoint: a GGUF file or an HF directory, into the IR. */
#ifndef FT_COMPILER_IMPORT_H
#define FT_COMPILER_IMPORT_H

#include "freetoken.h"
#include "ir.h"
#include "source.h"

/* A directory is read as an HF checkpoint, anything else as GGUF. */
FT_WARN_UNUSED ft_status_t ft_import_source(const char *path, ft_src_model_t **out_src);
/* Source model -> architecture mapping (models/) -> validated IR. */
FT_WARN_UNUSED ft_status_t ft_import_model(const char *path, ft_ir_model_t **out_model);

#endif

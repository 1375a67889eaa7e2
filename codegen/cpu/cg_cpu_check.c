/* libclang over emitted sources: every source is parsed (from memory, with
 * the ISA's flags) before it is compiled, errors are reported at
 * file:line:column with the kernel they fall in, and the kernel functions
 * and their ABI keys are read from the parsed source to build the entry
 * table (rather than trusting string handling to match what is compiled). */
#include "cg_cpu_internal.h"

#include <clang-c/Index.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ft_cg_sig_matmul =
    "void (const void *, size_t, const void *, uint32_t, uint32_t, uint32_t, float *, size_t)";
static const char *const ft_cg_sig_expert =
    "void (const void *, const void *, const void *, const void *, uint32_t, float *, float *, "
    "void *, float *)";
static const char *const ft_cg_sig_norm_prepare =
    "void (const float *, size_t, const float *, float, uint32_t, void *)";
static const char *const ft_cg_sig_router =
    "void (const void *, size_t, const void *, uint32_t, uint32_t, int, float *, int32_t *, float *, "
    "size_t)";
static const char *const ft_cg_sig_attn =
    "void (const float *, const float *, const float *, size_t, uint32_t, float, float *, size_t, "
    "float *)";
static const char *const ft_cg_sig_attn_f16 =
    "void (const float *, const uint16_t *, const uint16_t *, size_t, uint32_t, float, float *, "
    "size_t, float *)";

static const char *const ft_cg_sig_deltanet =
    "void (const float *, size_t, const float *, const float *, uint32_t, uint32_t, uint32_t, float *, "
    "float *, size_t)";

static const char *const ft_cg_sig_mla =
    "void (const float *, const float *, const float *, size_t, const float *, const uint32_t *, uint32_t, "
    "int, float, float *, float *, size_t)";

/* The ABI's function type of op with key format fmt (ft_kernel_abi.h), as
 * libclang spells it; NULL for an op the ABI does not have. */
static const char *ft_cg_sig(unsigned op, unsigned fmt)
{
    switch (op) {
    case FT_KABI_OP_MATMUL: return ft_cg_sig_matmul;
    case FT_KABI_OP_EXPERT: return ft_cg_sig_expert;
    case FT_KABI_OP_NORM_PREPARE: return ft_cg_sig_norm_prepare;
    case FT_KABI_OP_ROUTER: return ft_cg_sig_router;
    case FT_KABI_OP_ATTN: return fmt == FT_KABI_FMT_F16 ? ft_cg_sig_attn_f16 : ft_cg_sig_attn;
    case FT_KABI_OP_DELTANET: return ft_cg_sig_deltanet;
    case FT_KABI_OP_MLA: return ft_cg_sig_mla;
    default: return NULL;
    }
}

/* Parses source; on success *out_tu is the translation unit (dispose it
 * and *out_idx). Errors become one status naming the first one. */
FT_WARN_UNUSED static ft_status_t ft_cg_parse(const char *source, const char *isa, CXIndex *out_idx,
                               CXTranslationUnit *out_tu)
{
    const char *args[24];
    int n = 0;
    args[n++] = "-std=c11";
    args[n++] = "-xc";
    const char *const *fl = ft_cg_cpu_isa_flags(isa);
    for (; fl && *fl && n < 22; fl++)
        args[n++] = *fl;
    struct CXUnsavedFile uf = {FT_CG_SOURCE_NAME, source, (unsigned long)strlen(source)};
    CXIndex idx = clang_createIndex(0, 0);
    CXTranslationUnit tu = NULL;
    const enum CXErrorCode e =
        clang_parseTranslationUnit2(idx, FT_CG_SOURCE_NAME, args, n, &uf, 1, CXTranslationUnit_None, &tu);
    if (e != CXError_Success || !tu) {
        clang_disposeIndex(idx);
        return ft_status_make(FT_STATUS_UNAVAILABLE, "codegen: libclang could not parse %s (error %d)",
                              FT_CG_SOURCE_NAME, (int)e);
    }
    ft_status_t st = FT_OK;
    unsigned n_err = 0;
    for (unsigned i = 0; i < clang_getNumDiagnostics(tu); i++) {
        CXDiagnostic d = clang_getDiagnostic(tu, i);
        if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error && n_err++ == 0) {
            CXFile file;
            unsigned line = 0, col = 0;
            clang_getSpellingLocation(clang_getDiagnosticLocation(d), &file, &line, &col, NULL);
            CXString fname = clang_getFileName(file);
            CXString msg = clang_getDiagnosticSpelling(d);
            const char *fn = clang_getCString(fname);
            char kernel[128] = "?";
            if (fn && !strcmp(fn, FT_CG_SOURCE_NAME))
                ft_cg_cpu_function_at(source, line, kernel, sizeof(kernel));
            st = ft_status_make(FT_STATUS_FORMAT, "%s:%u:%u: in kernel '%s': error: %s",
                                fn ? fn : "?", line, col, kernel, clang_getCString(msg));
            clang_disposeString(fname);
            clang_disposeString(msg);
        }
        clang_disposeDiagnostic(d);
    }
    if (st) {
        if (n_err > 1)
            st = ft_status_annotate(st, "%s (ISA %s, %u errors, first shown)", FT_CG_SOURCE_NAME, isa, n_err);
        clang_disposeTranslationUnit(tu);
        clang_disposeIndex(idx);
        return st;
    }
    *out_idx = idx;
    *out_tu = tu;
    return FT_OK;
}

ft_status_t ft_cg_cpu_check(const char *source, const char *isa)
{
    if (!ft_cg_cpu_isa_valid(isa))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "codegen: unknown ISA '%s'", isa ? isa : "(null)");
    CXIndex idx;
    CXTranslationUnit tu;
    ft_status_t st = ft_cg_parse(source, isa, &idx, &tu);
    if (st)
        return st;
    clang_disposeTranslationUnit(tu);
    clang_disposeIndex(idx);
    return FT_OK;
}

typedef struct ft_cg_visit {
    FILE *out;
    uint32_t n;
    ft_status_t st;
} ft_cg_visit_t;

static enum CXChildVisitResult ft_cg_visit_attr(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    if (clang_getCursorKind(c) == CXCursor_AnnotateAttr) {
        CXString s = clang_getCursorSpelling(c);
        snprintf(data, 128, "%s", clang_getCString(s));
        clang_disposeString(s);
        return CXChildVisit_Break;
    }
    return CXChildVisit_Continue;
}

/* One top-level declaration: an ftk_ function definition becomes a row of
 * the entry table, keyed by its annotation, after its type is checked
 * against the ABI's function type for the op. */
static enum CXChildVisitResult ft_cg_visit_fn(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    ft_cg_visit_t *v = data;
    if (v->st || clang_getCursorKind(c) != CXCursor_FunctionDecl || !clang_isCursorDefinition(c) ||
        !clang_Location_isFromMainFile(clang_getCursorLocation(c)))
        return CXChildVisit_Continue;
    CXString name = clang_getCursorSpelling(c);
    const char *nm = clang_getCString(name);
    if (strncmp(nm, "ftk_", 4) != 0) {
        clang_disposeString(name);
        return CXChildVisit_Continue;
    }
    unsigned line = 0;
    clang_getSpellingLocation(clang_getCursorLocation(c), NULL, &line, NULL, NULL);
    char meta[128] = "";
    clang_visitChildren(c, ft_cg_visit_attr, meta);
    unsigned op = 0, fmt = 0, aux = 0, rows = 0, cols = 0;
    CXString ty = clang_getTypeSpelling(clang_getCursorType(c));
    if (sscanf(meta, "ft_kernel op=%u fmt=%u aux=%u rows=%u cols=%u", &op, &fmt, &aux, &rows, &cols) != 5) {
        v->st = ft_status_make(FT_STATUS_INTERNAL, "%s:%u: in kernel '%s': no ft_kernel annotation",
                               FT_CG_SOURCE_NAME, line, nm);
    } else {
        const char *want = ft_cg_sig(op, fmt);
        if (!want)
            v->st = ft_status_make(FT_STATUS_INTERNAL, "%s:%u: in kernel '%s': op %u is not in ABI %u",
                                   FT_CG_SOURCE_NAME, line, nm, op, FT_KABI_VERSION);
        else if (strcmp(clang_getCString(ty), want) != 0)
            v->st = ft_status_make(FT_STATUS_INTERNAL,
                                   "%s:%u: in kernel '%s': type '%s' is not the ABI's '%s' for op %u",
                                   FT_CG_SOURCE_NAME, line, nm, clang_getCString(ty), want, op);
        else
            fprintf(v->out, "    {%uu, %uu, %uu, %uu, %uu, \"%s\", (void (*)(void))%s},\n", op, fmt, aux,
                    rows, cols, nm, nm);
        v->n++;
    }
    clang_disposeString(ty);
    clang_disposeString(name);
    return CXChildVisit_Continue;
}

ft_status_t ft_cg_cpu_entry_table(const char *source, const char *isa, char **out)
{
    *out = NULL;
    CXIndex idx;
    CXTranslationUnit tu;
    ft_status_t st = ft_cg_parse(source, isa, &idx, &tu);
    if (st)
        return st;
    char *rows = NULL, *text = NULL;
    size_t rows_len = 0, text_len = 0;
    ft_cg_visit_t v = {.out = open_memstream(&rows, &rows_len)};
    if (!v.out) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "codegen: open_memstream failed");
        goto out_tu;
    }
    clang_visitChildren(clang_getTranslationUnitCursor(tu), ft_cg_visit_fn, &v);
    fclose(v.out);
    if ((st = v.st) != FT_OK || !rows)
        goto out_rows;
    FILE *o = open_memstream(&text, &text_len);
    if (!o) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "codegen: open_memstream failed");
        goto out_rows;
    }
    fprintf(o, "/* ---- entry table (from the kernels libclang found above) ---- */\n\n");
    fprintf(o, "FTK_EXPORT const uint32_t ft_kernel_module_abi = FT_KABI_VERSION;\n");
    fprintf(o, "FTK_EXPORT const char ft_kernel_module_isa[] = \"%s\";\n\n", isa);
    fprintf(o, "static const ft_kabi_entry_t ftk_entries[%u] = {\n%s};\n\n", v.n ? v.n : 1, rows);
    fprintf(o, "FTK_EXPORT int ft_kernel_module_entry(const ft_kabi_host_t *host, ft_kabi_table_t *out);\n"
               "FTK_EXPORT int ft_kernel_module_entry(const ft_kabi_host_t *host, ft_kabi_table_t *out)\n"
               "{\n    out->abi_version = FT_KABI_VERSION;\n"
               "    if (!host || host->abi_version != FT_KABI_VERSION || !host->act_prepare)\n"
               "        return 1;\n    ftt_host = host;\n    out->isa = ft_kernel_module_isa;\n"
               "    out->n_entries = %uu;\n    out->entries = ftk_entries;\n    return 0;\n}\n", v.n);
    if (fclose(o) != 0 || !text) {
        free(text);
        text = NULL;
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "codegen: writing the entry table failed");
    }
out_rows:
    free(rows);
out_tu:
    clang_disposeTranslationUnit(tu);
    clang_disposeIndex(idx);
    *out = text;
    return st;
}

/* A compiled bundle on disk: a directory holding plan.ftp and the FTW
 * weight files the plan names. Opening maps the plan and every weight file
 * and checks each file's size and header hash against the plan (cheap);
 * ft_bundle_verify re-hashes all weight bytes (expensive). */
#ifndef FT_FORMAT_BUNDLE_H
#define FT_FORMAT_BUNDLE_H

#include "freetoken.h"
#include "../base/mapped_file.h"
#include "ftw.h"
#include "plan.pb-c.h"

typedef struct ft_bundle {
    char *dir;
    ft_mapped_file_t *plan_file; /* plan.ftp bytes */
    Ftplan__Plan *plan;          /* validated */
    uint32_t n_weight_files;
    ft_ftw_t **weight_files;     /* [n_weight_files], parallel to plan->weight_files */
} ft_bundle_t;

/* 1 when path is a bundle directory (holds plan.ftp) or a plan.ftp file. */
int ft_bundle_is_bundle(const char *path);

/* path: the bundle directory, or its plan.ftp. */
FT_WARN_UNUSED ft_status_t ft_bundle_open(const char *path, ft_bundle_t **out_bundle);
FT_WARN_UNUSED ft_status_t ft_bundle_verify(const ft_bundle_t *bundle);
void ft_bundle_close(ft_bundle_t *bundle);

/* A bundle's identity, as `ftc inspect --json` and `ft bench --json`
 * report it: plan_hex, the XXH3-64 of the plan file's bytes (16 hex
 * digits, canonical byte order), and weights_hex, the XXH3-128 content
 * hash the plan records for its first weights file (32 hex digits; ""
 * when it names none). */
#define FT_BUNDLE_PLAN_HEX_BYTES 17
#define FT_BUNDLE_WEIGHTS_HEX_BYTES 33
void ft_bundle_ids(const Ftplan__Plan *plan, const uint8_t *plan_file, uint64_t plan_bytes,
                   char plan_hex[FT_BUNDLE_PLAN_HEX_BYTES],
                   char weights_hex[FT_BUNDLE_WEIGHTS_HEX_BYTES]);

#endif

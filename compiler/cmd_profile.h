/* ftc profile [-o FILE] [--quick] [--json] [--threads N] [--no-gpu] */
#ifndef FT_COMPILER_CMD_PROFILE_H
#define FT_COMPILER_CMD_PROFILE_H

/* argv[0] is "profile". Returns the exit code: 0 ok, 1 failure, 2 usage. */
int ftc_cmd_profile(int argc, char **argv);

#endif

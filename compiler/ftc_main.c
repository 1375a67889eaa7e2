/* ftc: the freetoken compiler driver. */
#include <stdio.h>

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "ftc: not built yet\n");
    return 2;
}

# Man pages ft(1) and ftc(1), generated at build time from the programs'
# own help (cmake/help2man.awk runs `PROG help` and `PROG help CMD`), so
# they cannot drift from it; installed under share/man/man1.
find_program(FT_AWK NAMES awk mawk gawk REQUIRED)
set(ft_man_dir ${CMAKE_BINARY_DIR}/man)
set(ft_man_pages "")
foreach(prog ft ftc)
  set(page ${ft_man_dir}/${prog}.1)
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${ft_man_dir}
    COMMAND sh -c "\"$1\" -v prog=\"$2\" -v name=$3 -v version=$4 -f \"$5\" > \"$6.tmp\" && mv \"$6.tmp\" \"$6\""
            sh ${FT_AWK} $<TARGET_FILE:${prog}> ${prog} ${PROJECT_VERSION}
            ${CMAKE_CURRENT_LIST_DIR}/help2man.awk ${page}
    DEPENDS ${prog} ${CMAKE_CURRENT_LIST_DIR}/help2man.awk
    COMMENT "man page ${prog}.1" VERBATIM)
  list(APPEND ft_man_pages ${page})
endforeach()
add_custom_target(ft_man_pages ALL DEPENDS ${ft_man_pages})
install(FILES ${ft_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

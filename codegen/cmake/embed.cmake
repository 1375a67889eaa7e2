# Writes OUT: a C file defining `const char NAME[]`, the bytes of IN plus a
# terminating NUL (cmake -DIN=... -DOUT=... -DNAME=... -P embed.cmake).
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* generated from ${NAME}'s template by embed.cmake, do not edit */\nextern const char ${NAME}[];\nconst char ${NAME}[] = {\n${bytes}0x00};\n")

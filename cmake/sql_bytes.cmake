# sql_bytes.cmake: c_bytes(HEX OUT) sets OUT to the bytes whose hex digits
# HEX holds (file(READ ... HEX), string(HEX)) as the body of a C char
# array, twelve a line, NUL-terminated: "0x2d,0x2d,...0x00".  Shared by
# embed_sql.cmake and embed_queries.cmake.
function(c_bytes hex out)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
    "\\1\n\t" bytes "${bytes}")
  set(${out} "${bytes}0x00" PARENT_SCOPE)
endfunction()
